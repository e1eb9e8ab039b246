# Options a user sets at configure time (-DNAME=VALUE or a preset in CMakePresets.json).

# AUTO: use CUDA when a CUDA compiler is found; ON: require it; OFF: CPU-only build.
set(GTL_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE GTL_CUDA PROPERTY STRINGS AUTO ON OFF)

# Which implementation of the labs' student-editable files is compiled:
#   solution  -> solution/   (the reference; must pass every check)
#   starter   -> starter/    (what students receive; fails the checks of its TODOs)
#   <path>    -> a student's copy of the starter tree (the grader builds submissions this way)
# A student release has no solution/ (gtl-grade export-release), so it defaults to starter.
if(EXISTS ${PROJECT_SOURCE_DIR}/solution)
  set(_gtl_default_impl solution)
else()
  set(_gtl_default_impl starter)
endif()
set(GTL_LABS_IMPL "${_gtl_default_impl}" CACHE STRING
    "Lab implementation: solution, starter or a path to a starter-shaped tree")

option(GTL_WERROR "Treat warnings in the project's own code as errors (CI turns this on)" OFF)
option(GTL_BUILD_BENCHMARKS "Build the Google Benchmark programs" ON)
option(GTL_WITH_MPI "Build the MPI backend when OpenMPI is found" ON)

if(GTL_LABS_IMPL STREQUAL "solution")
  set(GTL_LABS_DIR ${PROJECT_SOURCE_DIR}/solution)
elseif(GTL_LABS_IMPL STREQUAL "starter")
  set(GTL_LABS_DIR ${PROJECT_SOURCE_DIR}/starter)
else()
  get_filename_component(GTL_LABS_DIR "${GTL_LABS_IMPL}" ABSOLUTE BASE_DIR ${CMAKE_BINARY_DIR})
endif()
if(NOT IS_DIRECTORY "${GTL_LABS_DIR}")
  message(FATAL_ERROR "GTL_LABS_IMPL='${GTL_LABS_IMPL}': no such folder ${GTL_LABS_DIR}. "
                      "Use solution, starter, or the path of a copy of starter/.")
endif()

# Developers working on one part of the core can build only that part's sources, tests and
# benchmarks (runtime, memory and tensor are always built): -DGTL_PARTS="ops;optim".
set(GTL_PARTS "all" CACHE STRING "Parts of the core to build: all, or a list such as ops;optim")
function(gtl_part_enabled part out)
  set(always_built runtime memory tensor)
  if(GTL_PARTS STREQUAL "all" OR part IN_LIST GTL_PARTS OR part IN_LIST always_built)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# The build folder of another configuration of this course whose training core this build links
# instead of compiling its own (cmake/GtlPrebuiltCore.cmake); empty: compile the core here.
set(GTL_PREBUILT_CORE "" CACHE PATH "Build folder whose compiled core to reuse (empty: build it)")
