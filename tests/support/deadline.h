/*
 * A test's own deadline: STRAND_TEST_DEADLINE seconds, which
 * tests/CMakeLists.txt sets 20 s below the test's ctest timeout. Past it,
 * where the test is goes to its output: the stack of each of its threads
 * and of each gateway's it runs (gdb), and the end of each gateway's log;
 * then the gateways are killed and the test ends, failed. ctest's timeout
 * alone ends a test without a word of where it hung.
 */
#ifndef TESTS_SUPPORT_DEADLINE_H
#define TESTS_SUPPORT_DEADLINE_H

/* Arms it once (later calls do nothing): call it while the test is one
 * thread (it forks its watcher). The gateways are the test's children. */
void deadline_arm(void);

#endif
