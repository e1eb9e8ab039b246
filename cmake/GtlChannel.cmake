# The grader's channel files that every program of the course carries, each compiled once per
# build and linked into each program as an object file (docs/grader.md, "Trust model"):
#
#   gtl_verdict_listener  grader/channel/verdict_listener.cpp, in every GoogleTest program
#                         (gtl_add_test and the emulated tests add it; inert outside gtl-grade).
#   gtl_reference_guard   grader/channel/gtl_reference_guard.cpp, in every program that links the
#                         core (gtl_core's INTERFACE_SOURCES name it, so an imported core's do too).
#
# Objects, not a library's archive members: a student file that defines one of their functions
# (to forge a verdict or silence the guard) then fails to link instead of replacing it. Compiling
# them once instead of into each of several hundred programs saves minutes of every build.
set(_gtl_channel ${PROJECT_SOURCE_DIR}/grader/channel)

add_library(gtl_verdict_listener OBJECT ${_gtl_channel}/verdict_listener.cpp)
target_include_directories(gtl_verdict_listener PRIVATE ${_gtl_channel})  # gtl_test_seed.h
target_link_libraries(gtl_verdict_listener PRIVATE GTest::gtest)
gtl_target_warnings(gtl_verdict_listener)

add_library(gtl_reference_guard OBJECT ${_gtl_channel}/gtl_reference_guard.cpp)
target_include_directories(gtl_reference_guard PRIVATE ${_gtl_channel})
gtl_target_warnings(gtl_reference_guard)
