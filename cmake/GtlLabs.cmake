# gtl_lab_student_files(OUT <var> [EXTENSIONS .cu .cpp ...] [EXCEPT name ...])
#   The student files of the lab whose CMakeLists.txt calls it, as absolute paths in
#   ${GTL_LABS_DIR}/<lab> (solution, starter or a submission), in the order of the lab's
#   rubric.yaml. A lab declares its student files ONCE, in the rubric's `student_files:` list (the
#   grader reads the same list), and its CMake derives the kernel library and the emulated test's
#   kernel list from it:
#
#     gtl_lab_student_files(OUT host_sources EXTENSIONS .cpp)
#     gtl_lab_student_files(OUT emulated EXTENSIONS .cu .cuh .h EXCEPT event_timing.cu)
#
#   EXTENSIONS keeps the files whose names end so; EXCEPT drops files by name, and each must be a
#   student file (a misspelt name stops the configure step instead of being silently kept).
#   Only the block form of the list is read, one file per line:
#     student_files:
#       - reduce.cu
#       - "block_reduce.cuh"   # quotes and comments are allowed
#   Anything else (a missing rubric, a flow list [a, b], an empty list, a name with characters
#   other than letters, digits and . _ - + /) stops the configure step and says what it expected.
#   The CTest labs_student_files_test (cmake/tests/student_files_test.cmake) checks each case.

# The `student_files:` block of a rubric, one name per entry.
function(gtl_read_student_files rubric out_var)
  if(NOT EXISTS ${rubric})
    message(FATAL_ERROR "${rubric}: no such file; a lab declares its student files in its "
                        "rubric.yaml (student_files:, see docs/contributing.md)")
  endif()
  file(READ ${rubric} text)
  set(block_line "[ \t]*(-[^\n]*|#[^\n]*)?\n")
  if(NOT text MATCHES "(^|\n)student_files:[ \t]*(#[^\n]*)?\n((${block_line})*)")
    message(FATAL_ERROR "${rubric}: expected a block list 'student_files:' at the start of a "
                        "line, followed by one '  - file' per line")
  endif()
  string(REGEX MATCHALL "(^|\n)[ \t]*-[^\n]*" items "${CMAKE_MATCH_3}")
  set(files)
  foreach(item ${items})
    string(REGEX REPLACE "^\n?[ \t]*-[ \t]*" "" name "${item}")
    string(REGEX REPLACE "[ \t]+#.*$" "" name "${name}")
    string(STRIP "${name}" name)
    string(REGEX REPLACE "^\"(.*)\"$" "\\1" name "${name}")
    string(REGEX REPLACE "^'(.*)'$" "\\1" name "${name}")
    if(NOT name MATCHES "^[A-Za-z0-9_.+/-]+$")
      message(FATAL_ERROR "${rubric}: student_files: '${item}' is not a file name (letters, "
                          "digits and . _ - + / only)")
    endif()
    list(APPEND files ${name})
  endforeach()
  if(NOT files)
    message(FATAL_ERROR "${rubric}: student_files: lists no file; expected one '  - file' per "
                        "line under it")
  endif()
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

function(gtl_lab_student_files)
  cmake_parse_arguments(S "" "OUT" "EXTENSIONS;EXCEPT" ${ARGN})
  get_filename_component(lab ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(rubric ${CMAKE_CURRENT_SOURCE_DIR}/rubric.yaml)
  gtl_read_student_files(${rubric} names)
  foreach(name ${S_EXCEPT})
    if(NOT name IN_LIST names)
      message(FATAL_ERROR "gtl_lab_student_files(EXCEPT ${name}): ${name} is not among the "
                          "student files of ${rubric} (${names})")
    endif()
  endforeach()
  set(files)
  foreach(name ${names})
    set(keep TRUE)
    if(S_EXTENSIONS)
      set(keep FALSE)
      foreach(ext ${S_EXTENSIONS})
        string(LENGTH "${ext}" ext_length)
        string(LENGTH "${name}" name_length)
        if(name_length GREATER ext_length)
          math(EXPR at "${name_length} - ${ext_length}")
          string(SUBSTRING "${name}" ${at} -1 tail)
          if(tail STREQUAL ext)
            set(keep TRUE)
          endif()
        endif()
      endforeach()
    endif()
    if(keep AND NOT name IN_LIST S_EXCEPT)
      list(APPEND files ${GTL_LABS_DIR}/${lab}/${name})
    endif()
  endforeach()
  set(${S_OUT} ${files} PARENT_SCOPE)
endfunction()
