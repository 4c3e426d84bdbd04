# Writes a C file that holds one file's bytes, NUL-terminated:
#   cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P embed_file.cmake
# gives SYMBOL[] and SYMBOL_len (the bytes before the NUL).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* Generated from ${IN} by embed_file.cmake: do not edit. */\n#include <stddef.h>\n"
                    "const unsigned char ${NAME}[] = {${bytes}0};\nconst size_t ${NAME}_len = ${size};\n")
