# gtl_add_emulated_test(NAME name KERNELS a.cu b.cuh ... SOURCES test.cpp [INCLUDES dir ...]
#                       [DEFINITIONS NAME ...])
#   A GoogleTest program (CTest label `cpu`) that runs CUDA kernel files on the CPU emulator in
#   common/emulator: their correctness is then checked on every machine, GPU or not (speed is
#   not: that is the benchmarks' job). At configure time each kernel file is copied into the
#   build tree with every launch `kernel<<<grid, block, smem, stream>>>(args)` rewritten as
#   `emu::Launcher(kernel, grid, block, smem, stream)(args)` and every `extern __shared__ T x[];`
#   as a pointer to the launch's dynamic shared memory; the copies are compiled as C++. Editing
#   a kernel file re-runs the configure step, so the copies never go stale.
set(GTL_EMULATOR_DIR ${CMAKE_CURRENT_LIST_DIR}/../common/emulator)

# gtl_emulator_rewrite_launches(<text> <out-var>): kernel<<<config>>>(args) becomes
# emu::Launcher(kernel, config)(args). Written as a scan, not one regular expression: a launch
# configuration may itself contain '>' (static_cast<int>(blocks)), and CMake's expressions have no
# lazy match. A '<<<' with no kernel name before it (in a comment, say) is left as it is.
function(gtl_emulator_rewrite_launches text out_var)
  set(space "[ \t\r\n]")
  set(identifier "[A-Za-z_][A-Za-z0-9_]*")
  set(out "")
  set(rest "${text}")
  while(TRUE)
    string(FIND "${rest}" "<<<" open)
    if(open EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${open} before)
    math(EXPR after_open "${open} + 3")
    string(SUBSTRING "${rest}" ${after_open} -1 tail)
    string(FIND "${tail}" ">>>" close)
    if(close EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${tail}" 0 ${close} config)
    math(EXPR after_close "${close} + 3")
    string(SUBSTRING "${tail}" ${after_close} -1 rest)
    set(kernel "")
    if(before MATCHES "(${identifier}(::${identifier})*(<[^<>;]*>)?)${space}*$")
      set(kernel "${CMAKE_MATCH_1}")  # saved now: the next MATCHES resets CMAKE_MATCH_*
      string(LENGTH "${CMAKE_MATCH_0}" name_length)
    endif()
    if(kernel AND rest MATCHES "^${space}*\\(")
      string(LENGTH "${before}" before_length)
      math(EXPR keep "${before_length} - ${name_length}")
      string(SUBSTRING "${before}" 0 ${keep} before)
      string(REGEX REPLACE "^${space}*\\(" "" rest "${rest}")
      string(APPEND out "${before}emu::Launcher(${kernel}, ${config})(")
    else()
      string(APPEND out "${before}<<<${config}>>>")
    endif()
  endwhile()
  string(APPEND out "${rest}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(gtl_add_emulated_test)
  cmake_parse_arguments(E "" "NAME" "KERNELS;SOURCES;INCLUDES;DEFINITIONS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${E_NAME}_kernels)
  set(kernel_sources)
  set(space "[ \t\r\n]")
  set(identifier "[A-Za-z_][A-Za-z0-9_]*")
  foreach(file ${E_KERNELS})
    file(READ ${file} text)
    gtl_emulator_rewrite_launches("${text}" text)
    # The element type may be one letter: `extern __shared__ T buf[];` in a template kernel.
    string(REGEX REPLACE "extern${space}+__shared__${space}+([A-Za-z_][A-Za-z0-9_: ]*[A-Za-z0-9_]|[A-Za-z_])${space}+(${identifier})${space}*\\[${space}*\\]${space}*;"
                         "\\1* const \\2 = static_cast<\\1*>(emu::dynamic_shared());" text "${text}")
    # Compiler errors and sanitizer reports then name the original file and line, not the copy.
    set(text "#line 1 \"${file}\"\n${text}")
    get_filename_component(name ${file} NAME)
    if(name MATCHES "\\.cu$")
      set(name ${name}.cpp)
      list(APPEND kernel_sources ${out_dir}/${name})
    endif()
    # Rewrite only on change: an unchanged copy keeps its timestamp and is not recompiled.
    set(old "")
    if(EXISTS ${out_dir}/${name})
      file(READ ${out_dir}/${name} old)
    endif()
    if(NOT old STREQUAL text)
      file(WRITE ${out_dir}/${name} "${text}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  endforeach()

  add_executable(${E_NAME} ${E_SOURCES} ${kernel_sources}
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
