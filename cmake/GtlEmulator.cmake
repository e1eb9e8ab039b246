# gtl_add_emulated_test(NAME name KERNELS a.cu b.cuh ... SOURCES test.cpp [INCLUDES dir ...]
#                       [DEFINITIONS NAME ...])
#   A GoogleTest program (CTest label `cpu`) that runs CUDA kernel files on the CPU emulator in
#   common/emulator: their correctness is then checked on every machine, GPU or not (speed is
#   not: that is the benchmarks' job). At build time the emulate_launches tool
#   (common/tools/launch_rewrite.h, with unit tests) copies each kernel file into the build tree
#   with every launch `kernel<<<grid, block, smem, stream>>>(args)` rewritten as
#   `emu::Launcher(kernel, grid, block, smem, stream)(args)` and every `extern __shared__ T x[];`
#   as a pointer to the launch's dynamic shared memory; the copies are compiled as C++. Editing
#   a kernel file re-runs the tool for that file, so the copies never go stale.
#
# gtl_add_emulated_library(NAME name SOURCES a.cpp ... KERNELS gtl/x/y.cu ... BASE_DIR dir)
#   A static library whose .cu files (paths relative to BASE_DIR) go through the same rewrite and
#   emulated build, beside plain C++ sources that include the emulator's cuda_runtime.h,
#   cublas_v2.h and cudnn.h (common/emulator) instead of the toolkit's. The emulated-CUDA build
#   of the core, gtl_core_emulated (common/CMakeLists.txt), is one. Needs no CUDA compiler.
#
# gtl_add_emulated_core_test(NAME name SOURCES test.cpp ... [KERNELS a.cu ...] [INCLUDES dir ...])
#   A test of the core's CUDA path (a GPU test source, usually) built against gtl_core_emulated
#   with GTL_EMULATED_CUDA defined (gtl_test.h then picks the small shapes), label `cpu`; KERNELS
#   are kernel files rewritten and compiled as gtl_add_emulated_test's are (a lab's kernels that
#   plug into the core). Does nothing when the emulated core is not built.
set(GTL_EMULATOR_DIR ${CMAKE_CURRENT_LIST_DIR}/../common/emulator)

# The emulated copies of `files` in out_dir: every copy in ${copies_var}, the .cu copies (the ones
# to compile) in ${sources_var}. With base_dir, a copy keeps its path relative to it.
function(gtl_emulated_kernel_copies out_dir base_dir copies_var sources_var)
  set(copies)
  set(sources)
  foreach(file ${ARGN})
    if(base_dir)
      set(name ${file})
      set(file ${base_dir}/${file})
    else()
      get_filename_component(name ${file} NAME)
    endif()
    if(name MATCHES "\\.cu$")
      set(name ${name}.cpp)
      list(APPEND sources ${out_dir}/${name})
    endif()
    get_filename_component(copy_dir ${out_dir}/${name} DIRECTORY)
    # The tool writes the copy only when its text changes: an unchanged copy is not recompiled.
    add_custom_command(
      OUTPUT ${out_dir}/${name}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${copy_dir}
      COMMAND emulate_launches ${file} ${out_dir}/${name}
      DEPENDS emulate_launches ${file}
      COMMENT "Emulated copy of ${name}"
      VERBATIM)
    list(APPEND copies ${out_dir}/${name})
  endforeach()
  # Kernel files get nvcc's warnings in the CUDA build; as host C++ (unsigned threadIdx, unknown
  # pragmas) they would get others that say nothing about the kernel, so none are shown here.
  set_source_files_properties(${sources} PROPERTIES COMPILE_OPTIONS
                              "-include;${GTL_EMULATOR_DIR}/cuda_emulator.h;-w")
  set(${copies_var} ${copies} PARENT_SCOPE)
  set(${sources_var} ${sources} PARENT_SCOPE)
endfunction()

# What a GPU (or compute-sanitizer) would stop: a read or write outside an array, and a float4
# load from an address that is not 16-byte aligned ("misaligned address"). On the CPU both just
# work; the sanitizers make them fail here too, naming the kernel's line (-g1: line tables).
function(gtl_emulated_sanitizers target scope)
  target_compile_options(${target} ${scope} -g1 -fsanitize=address,alignment
                                            -fno-sanitize-recover=alignment)
  target_link_options(${target} ${scope} -fsanitize=address,alignment)
endfunction()

function(gtl_add_emulated_test)
  cmake_parse_arguments(E "" "NAME" "KERNELS;SOURCES;INCLUDES;DEFINITIONS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${E_NAME}_kernels)
  gtl_emulated_kernel_copies(${out_dir} "" copies kernel_sources ${E_KERNELS})
  # Every copy (headers included) is a source of the test, so all exist before any compiles.
  add_executable(${E_NAME} ${E_SOURCES} ${copies} $<TARGET_OBJECTS:gtl_verdict_listener>)
  gtl_test_files_at_o1(${E_SOURCES})
  # The emulator's cuda_runtime.h comes first, before any CUDA toolkit on the system.
  target_include_directories(${E_NAME} BEFORE PRIVATE ${GTL_EMULATOR_DIR} ${out_dir} ${E_INCLUDES})
  target_include_directories(${E_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/grader/channel)  # the seed
  target_compile_definitions(${E_NAME} PRIVATE ${E_DEFINITIONS})
  gtl_emulated_sanitizers(${E_NAME} PRIVATE)
  target_link_libraries(${E_NAME} PRIVATE GTest::gtest GTest::gtest_main)
  gtl_target_warnings(${E_NAME})
  add_test(NAME ${E_NAME} COMMAND ${E_NAME} --gtest_brief=1)
  set_tests_properties(${E_NAME} PROPERTIES LABELS cpu TIMEOUT 300)
endfunction()

function(gtl_add_emulated_library)
  cmake_parse_arguments(L "" "NAME;BASE_DIR" "SOURCES;KERNELS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${L_NAME}_kernels)
  gtl_emulated_kernel_copies(${out_dir} "${L_BASE_DIR}" copies kernel_sources ${L_KERNELS})
  add_library(${L_NAME} STATIC ${L_SOURCES} ${copies})
  # The emulator's headers come first, before any CUDA toolkit on the system; so do they for
  # every target that links the library (its headers include cuda_runtime.h).
  target_include_directories(${L_NAME} BEFORE PUBLIC ${GTL_EMULATOR_DIR})
  target_include_directories(${L_NAME} PRIVATE ${out_dir})
  gtl_emulated_sanitizers(${L_NAME} PUBLIC)
  # -O1 (the level AddressSanitizer recommends): half the compile time of -O3 for the same checks,
  # and for the tests that link it.
  target_compile_options(${L_NAME} PUBLIC -O1)
  gtl_target_warnings(${L_NAME})
endfunction()

function(gtl_add_emulated_core_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;INCLUDES;KERNELS" ${ARGN})
  if(NOT TARGET gtl_core_emulated)
    return()
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_kernels)
  gtl_emulated_kernel_copies(${out_dir} "" copies kernel_sources ${T_KERNELS})
  if(NOT TARGET gtl_test_main_emulated)
    # The tests' main (common/tests/gtl_test_main.cpp), compiled once against the emulated core.
    add_library(gtl_test_main_emulated OBJECT ${PROJECT_SOURCE_DIR}/common/tests/gtl_test_main.cpp)
    target_link_libraries(gtl_test_main_emulated PRIVATE gtl_core_emulated GTest::gtest)
    target_include_directories(gtl_test_main_emulated PRIVATE ${PROJECT_SOURCE_DIR}/common/tests)
    gtl_target_warnings(gtl_test_main_emulated)
  endif()
  add_executable(${T_NAME} ${T_SOURCES} ${copies} $<TARGET_OBJECTS:gtl_test_main_emulated>
                           $<TARGET_OBJECTS:gtl_verdict_listener>)
  gtl_test_files_at_o1(${T_SOURCES})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/common/tests
                                               ${PROJECT_SOURCE_DIR}/grader/channel ${T_INCLUDES})
  target_include_directories(${T_NAME} BEFORE PRIVATE ${out_dir})
  target_link_libraries(${T_NAME} PRIVATE gtl_core_emulated GTest::gtest)
  gtl_target_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_brief=1)
  set_tests_properties(${T_NAME} PROPERTIES LABELS cpu TIMEOUT 300)
endfunction()
