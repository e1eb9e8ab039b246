# cmake -DWORK_DIR=<dir> -P student_files_test.cmake: checks gtl_read_student_files
# (cmake/GtlLabs.cmake), which every lab's CMake uses to read its rubric's student_files: list.
# Each case writes a rubric, reads it in a separate cmake process and compares what came back
# (the file list, or the configure error) with what was expected.
cmake_minimum_required(VERSION 3.25)
set(labs_cmake ${CMAKE_CURRENT_LIST_DIR}/../GtlLabs.cmake)
file(MAKE_DIRECTORY ${WORK_DIR})
set(failures 0)

# expect_case(<name> <rubric text> <expected stdout fragment or error fragment> OK|ERROR)
function(expect_case name text expected kind)
  set(rubric ${WORK_DIR}/${name}.yaml)
  file(WRITE ${rubric} "${text}")
  file(WRITE ${WORK_DIR}/${name}.cmake
       "include(${labs_cmake})\ngtl_read_student_files(${rubric} files)\n"
       "message(STATUS \"files=[\${files}]\")\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -P ${WORK_DIR}/${name}.cmake RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \t\r\n]+" " " all "${out} ${err}")
  string(FIND "${all}" "${expected}" at)
  if((kind STREQUAL "OK" AND NOT rc EQUAL 0) OR (kind STREQUAL "ERROR" AND rc EQUAL 0)
     OR at EQUAL -1)
    message(SEND_ERROR "student_files case '${name}': expected ${kind} with '${expected}', got "
                       "exit code ${rc} and: ${all}\n(the student-file list a lab's CMake reads "
                       "from its rubric, cmake/GtlLabs.cmake)")
  endif()
endfunction()

expect_case(block_list "lab: \"02\"\nstudent_files:\n  - reduce.cu\n  - block_reduce.cuh\ntodos:\n  - {id: \"1\"}\n"
            "files=[reduce.cu;block_reduce.cuh]" OK)
expect_case(quotes_comments "student_files:   # the files\n  - \"a.cu\"   # first\n  # a comment - with a dash\n\n  - 'sub/b_c.cuh'\nchecks: []\n"
            "files=[a.cu;sub/b_c.cuh]" OK)
expect_case(flow_list "student_files: [a.cu, b.cu]\n" "expected a block list 'student_files:'" ERROR)
expect_case(empty_list "student_files:\ntodos:\n" "student_files: lists no file" ERROR)
expect_case(bad_name "student_files:\n  - a b.cu\n" "is not a file name" ERROR)
expect_case(missing_key "todos:\n  - {id: \"1\"}\n" "expected a block list 'student_files:'" ERROR)
