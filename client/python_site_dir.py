"""Where python3 looks for packages under a prefix (CMake's
STRAND_PYTHON_INSTALL_DIR), relative to it: argv[1]."""

import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
if prefix == "/usr" and "deb_system" in sysconfig.get_scheme_names():
    site = "/usr/lib/python3/dist-packages"  # Debian's, for its own packages
else:
    site = sysconfig.get_path("purelib")  # Debian's python3: /usr/local/lib/python3.X/dist-packages
    if os.path.commonpath([site, prefix]) != prefix:
        # Another prefix: where a python3 of its own there would look.
        site = sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
print(os.path.relpath(site, prefix))
