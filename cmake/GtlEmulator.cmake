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
set(GTL_EMULATOR_DIR ${CMAKE_CURRENT_LIST_DIR}/../common/emulator)

function(gtl_add_emulated_test)
  cmake_parse_arguments(E "" "NAME" "KERNELS;SOURCES;INCLUDES;DEFINITIONS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${E_NAME}_kernels)
  set(kernel_sources)
  set(copies)
  foreach(file ${E_KERNELS})
    get_filename_component(name ${file} NAME)
    if(name MATCHES "\\.cu$")
      set(name ${name}.cpp)
      list(APPEND kernel_sources ${out_dir}/${name})
    endif()
    # The tool writes the copy only when its text changes: an unchanged copy is not recompiled.
    add_custom_command(
      OUTPUT ${out_dir}/${name}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND emulate_launches ${file} ${out_dir}/${name}
      DEPENDS emulate_launches ${file}
      COMMENT "Emulated copy of ${name}"
      VERBATIM)
    list(APPEND copies ${out_dir}/${name})
  endforeach()

  # Every copy (headers included) is a source of the test, so all exist before any compiles.
  add_executable(${E_NAME} ${E_SOURCES} ${copies}
                            ${PROJECT_SOURCE_DIR}/grader/channel/verdict_listener.cpp)
  # The emulator's cuda_runtime.h comes first, before any CUDA toolkit on the system.
  target_include_directories(${E_NAME} BEFORE PRIVATE ${GTL_EMULATOR_DIR} ${out_dir} ${E_INCLUDES})
  target_include_directories(${E_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/grader/channel)  # the seed
  # Kernel files get nvcc's warnings in the CUDA build; as host C++ (unsigned threadIdx, unknown
  # pragmas) they would get others that say nothing about the kernel, so none are shown here.
  set_source_files_properties(${kernel_sources} PROPERTIES COMPILE_OPTIONS
                              "-include;${GTL_EMULATOR_DIR}/cuda_emulator.h;-w")
  target_compile_definitions(${E_NAME} PRIVATE ${E_DEFINITIONS})
  # What a GPU (or compute-sanitizer) would stop: a read or write outside an array, and a float4
  # load from an address that is not 16-byte aligned ("misaligned address"). On the CPU both just
  # work; the sanitizers make them fail here too, naming the kernel's line (-g1: line tables).
  target_compile_options(${E_NAME} PRIVATE -g1 -fsanitize=address,alignment
                                           -fno-sanitize-recover=alignment)
  target_link_options(${E_NAME} PRIVATE -fsanitize=address,alignment)
  target_link_libraries(${E_NAME} PRIVATE GTest::gtest GTest::gtest_main)
  gtl_target_warnings(${E_NAME})
  add_test(NAME ${E_NAME} COMMAND ${E_NAME} --gtest_brief=1)
  set_tests_properties(${E_NAME} PROPERTIES LABELS cpu TIMEOUT 300)
endfunction()
