# gtl_add_test(NAME name SOURCES ... LABELS cpu|gpu [LIBS ...])
#   One GoogleTest executable registered with CTest as one test, labelled `cpu` or `gpu`.
#   GPU tests are built in every configuration; without a device they GTEST_SKIP() with a reason,
#   which CTest shows as skipped (SKIP_REGULAR_EXPRESSION on GoogleTest's "[  SKIPPED ]").
# gtl_test_files_at_o1(file ...): the files among these that are test code (in a tests/ folder)
#   compile at -O1 in an optimised build (Release, RelWithDebInfo), the code under test at the build
#   type's -O3. A test file arranges inputs and compares results; -O1 compiles it about a third
#   faster (GoogleTest's macros are most of what the optimiser sees) and gives the same floating-
#   point results (no -ffast-math; no FMA without -march). Debug builds keep -O0 for the debugger.
function(gtl_test_files_at_o1)
  foreach(file ${ARGN})
    get_filename_component(path ${file} ABSOLUTE)
    if(path MATCHES "/tests/")
      set_property(SOURCE ${file} APPEND PROPERTY COMPILE_OPTIONS
                   $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
    endif()
  endforeach()
endfunction()

function(gtl_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  # The grader's verdict channel (cmake/GtlChannel.cmake): inert outside gtl-grade.
  add_executable(${T_NAME} ${T_SOURCES} $<TARGET_OBJECTS:gtl_verdict_listener>)
  gtl_test_files_at_o1(${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE gtl_core gtl_test_main GTest::gtest ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/grader/channel)  # seed
  gtl_target_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_brief=1)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if("gpu" IN_LIST T_LABELS)
    # All tests of a GPU binary skipped (no device): report the binary as skipped, not passed.
    set_tests_properties(${T_NAME} PROPERTIES SKIP_REGULAR_EXPRESSION "GTL_ALL_SKIPPED")
  endif()
endfunction()

# gtl_add_benchmark(NAME name SOURCES ... [LIBS ...]): one Google Benchmark executable.
function(gtl_add_benchmark)
  cmake_parse_arguments(B "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(NOT GTL_BUILD_BENCHMARKS)
    return()
  endif()
  add_executable(${B_NAME} ${B_SOURCES})
  target_link_libraries(${B_NAME} PRIVATE gtl_core benchmark::benchmark ${B_LIBS})
  # gpu_timed_loop.h: how every benchmark of GPU work is timed.
  target_include_directories(${B_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/common/bench)
  # The reference guard's scopes (grader/channel/gtl_reference_guard.h) around student calls.
  target_include_directories(${B_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/grader/channel)
  gtl_target_warnings(${B_NAME})
  set_property(GLOBAL APPEND PROPERTY GTL_BENCHMARKS ${B_NAME})
endfunction()

# gtl_add_judge(NAME name SOURCES ... [INCLUDES ...] [LIBS ...]): a lab's judge (docs/grader.md,
# "The judge"), built from the course's sources only and linked with the core, seeing the grader's
# channel headers. Nothing is built where the lab has no judge/ folder: the students' release
# (gtl-grade export-release) leaves the judges out.
function(gtl_add_judge)
  cmake_parse_arguments(J "" "NAME" "SOURCES;INCLUDES;LIBS" ${ARGN})
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/judge)
    return()
  endif()
  add_executable(${J_NAME} ${J_SOURCES})
  target_link_libraries(${J_NAME} PRIVATE gtl_core ${J_LIBS})
  target_include_directories(${J_NAME} PRIVATE ${J_INCLUDES} ${PROJECT_SOURCE_DIR}/grader/channel)
  gtl_target_warnings(${J_NAME})
endfunction()
