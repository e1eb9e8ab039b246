# One build of the training core, shared by every build that only adds labs to it.
#
# The core (gtl_core, with gtl_test_main that every lab test links, the emulate_launches tool
# that every emulated test runs, and gtl_core_emulated where the build has it) takes minutes to
# compile on a small machine, and it does not depend on which lab implementation a build compiles
# (starter, solution or a submission): only the labs do. So a build can take the core from another
# build instead of compiling it again:
#
#   cmake --preset student                                  # builds and exports the core
#   cmake -S . -B build/x -DGTL_PREBUILT_CORE=$PWD/build/student -DGTL_LABS_IMPL=<tree>
#
# The grader does the second for its private build of a submission (scripts/start.sh passes the
# student preset's build folder, scripts/test.sh the ci preset's), so grading compiles only the
# lab files. Every build that compiles the core exports it (gtl_export_core); the target
# `gtl_prebuilt_core` builds exactly what a consumer imports.
#
# A consumer imports the core only when it was built the same way: the same build type,
# compilers, compile flags, CUDA backend (and architectures), optional libraries and parts, and
# the same core sources (a digest of common/ and cmake/, so a clone of the same commit
# qualifies). Warnings-as-errors does not change what is compiled, so it may differ; the grader's
# build also differs from the presets only in that and in exporting compile commands. Sanitizers
# are on only in the emulated builds (cmake/GtlEmulator.cmake): the lab kernels' tests, which
# link no core, and gtl_core_emulated, which carries its own. When anything differs, the
# consumer compiles its own core and its configure summary says why. The imported files are only
# read, never rebuilt: a sandboxed build (the grader's) sees them read-only.

# What must match between the build that compiled the core and a build that imports it.
function(_gtl_core_settings out)
  set(core_files)
  foreach(glob common/*.txt common/*.cmake common/gtl/* common/tests/gtl_test_main*
               common/tools/* common/emulator/* cmake/*.cmake
               grader/channel/gtl_reference_guard*)
    file(GLOB_RECURSE found ${PROJECT_SOURCE_DIR}/${glob})
    list(APPEND core_files ${found})
  endforeach()
  list(REMOVE_DUPLICATES core_files)
  list(SORT core_files)
  set(digest_text "")
  foreach(f ${core_files})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${f})
    file(SHA256 ${f} h)
    string(APPEND digest_text "${rel} ${h}\n")
  endforeach()
  string(SHA256 digest "${digest_text}")
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  set(settings
      "build type=${CMAKE_BUILD_TYPE}"
      "C++ compiler=${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_VERSION}"
      "C++ flags=${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}}"
      "CUDA backend=${GTL_HAVE_CUDA}"
      "parts=${GTL_PARTS}"
      "MPI=${GTL_HAVE_MPI}"
      "core sources=${digest}")
  if(GTL_HAVE_CUDA)
    list(APPEND settings
         "CUDA compiler=${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION}"
         "CUDA flags=${CMAKE_CUDA_FLAGS} ${CMAKE_CUDA_FLAGS_${config}}"
         "CUDA architectures=${CMAKE_CUDA_ARCHITECTURES}"
         "cuDNN=${GTL_HAVE_CUDNN}" "NCCL=${GTL_HAVE_NCCL}" "NVTX=${GTL_HAVE_NVTX}")
  endif()
  set(${out} "${settings}" PARENT_SCOPE)
endfunction()

set(_gtl_core_targets gtl_core gtl_test_main emulate_launches)

# The core built again on the CPU emulator (gtl_core_emulated), where this build has it: a lab
# whose checks run the core's CUDA path on the emulator (gtl_add_emulated_core_test) links it.
function(_gtl_exported_targets out)
  set(targets ${_gtl_core_targets})
  if(TARGET gtl_core_emulated)
    list(APPEND targets gtl_core_emulated)
  endif()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# In a build that compiles the core: writes <build>/gtl-prebuilt-core/{targets,settings}.cmake,
# which GTL_PREBUILT_CORE=<build> reads, and adds the target that builds what they describe.
function(gtl_export_core)
  set(dir ${CMAKE_BINARY_DIR}/gtl-prebuilt-core)
  _gtl_exported_targets(targets)
  export(TARGETS ${targets} FILE ${dir}/targets.cmake)
  _gtl_core_settings(settings)
  file(WRITE ${dir}/settings.cmake
       "# Written by cmake/GtlPrebuiltCore.cmake: how this build compiled the training core.\n"
       "set(GTL_PREBUILT_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")\n"
       "set(GTL_PREBUILT_SETTINGS \"${settings}\")\n")
  # The files a consumer links and runs: it takes the core only once they are built.
  set(files)
  foreach(t ${targets})
    list(APPEND files "$<TARGET_FILE:${t}>")
  endforeach()
  file(GENERATE OUTPUT ${dir}/files.cmake CONTENT "set(GTL_PREBUILT_FILES \"${files}\")\n")
  add_custom_target(gtl_prebuilt_core DEPENDS ${targets})
endfunction()

# Why the core in `dir` cannot be used by this build ("" when it can).
function(_gtl_prebuilt_mismatch dir out)
  if(NOT EXISTS ${dir}/gtl-prebuilt-core/settings.cmake)
    set(${out} "${dir} holds no exported core (configure that build first)" PARENT_SCOPE)
    return()
  endif()
  include(${dir}/gtl-prebuilt-core/settings.cmake)
  include(${dir}/gtl-prebuilt-core/files.cmake)
  foreach(f ${GTL_PREBUILT_FILES})
    if(NOT EXISTS ${f})
      set(${out} "${f} is not built (cmake --build ${dir} --target gtl_prebuilt_core)"
          PARENT_SCOPE)
      return()
    endif()
  endforeach()
  _gtl_core_settings(mine)
  foreach(theirs ${GTL_PREBUILT_SETTINGS})
    if(NOT theirs IN_LIST mine)
      string(FIND "${theirs}" "=" eq)
      string(SUBSTRING "${theirs}" 0 ${eq} key)
      foreach(m ${mine})
        string(FIND "${m}" "${key}=" at)
        if(at EQUAL 0)
          set(${out} "it was built with ${theirs}, this build has ${m}" PARENT_SCOPE)
          return()
        endif()
      endforeach()
      set(${out} "it was built with ${theirs}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Imports the core of GTL_PREBUILT_CORE when it matches this build; sets GTL_CORE_IMPORTED (in
# the caller's scope), GTL_CORE_BUILD_DIR (the build whose core this one links) and GTL_CORE_ORIGIN,
# the configure summary's line.
macro(gtl_import_core)
  set(GTL_CORE_IMPORTED OFF)
  set(GTL_CORE_ORIGIN "built here")
  set(GTL_CORE_BUILD_DIR ${CMAKE_BINARY_DIR})
  if(GTL_PREBUILT_CORE)
    get_filename_component(_gtl_dir "${GTL_PREBUILT_CORE}" ABSOLUTE)
    _gtl_prebuilt_mismatch(${_gtl_dir} _gtl_why)
    if(_gtl_why)
      set(GTL_CORE_ORIGIN "built here, not taken from ${_gtl_dir}: ${_gtl_why}")
      message(STATUS "GTL_PREBUILT_CORE: not taking the core from ${_gtl_dir}: ${_gtl_why}; "
                     "this build compiles its own")
    else()
      include(${_gtl_dir}/gtl-prebuilt-core/targets.cmake)
      include(${_gtl_dir}/gtl-prebuilt-core/settings.cmake)
      # The sources are the same (the digest matched): headers come from this build's own tree,
      # which a sandbox shows even where the exporting build's tree is hidden.
      # Not SYSTEM (the default of an imported target): lab files see the core's headers as
      # they do in a build that compiles the core.
      set(_gtl_targets gtl_core gtl_test_main)
      if(TARGET gtl_core_emulated)
        list(APPEND _gtl_targets gtl_core_emulated)
      endif()
      foreach(_gtl_t ${_gtl_targets})
        get_target_property(_gtl_inc ${_gtl_t} INTERFACE_INCLUDE_DIRECTORIES)
        set(_gtl_mine)
        foreach(_gtl_d ${_gtl_inc})
          string(FIND "${_gtl_d}/" "${GTL_PREBUILT_SOURCE_DIR}/" _gtl_at)
          if(_gtl_at EQUAL 0)
            string(LENGTH "${GTL_PREBUILT_SOURCE_DIR}" _gtl_n)
            string(SUBSTRING "${_gtl_d}" ${_gtl_n} -1 _gtl_rest)
            set(_gtl_d "${PROJECT_SOURCE_DIR}${_gtl_rest}")
          endif()
          list(APPEND _gtl_mine "${_gtl_d}")
        endforeach()
        set_target_properties(${_gtl_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_gtl_mine}"
                                                   SYSTEM OFF)
      endforeach()
      # The reference guard every program links (common/CMakeLists.txt): the imported targets
      # name the object library gtl_reference_guard, which this build compiles from its own tree
      # (cmake/GtlChannel.cmake).
      set(GTL_CORE_IMPORTED ON)
      set(GTL_CORE_BUILD_DIR ${_gtl_dir})
      set(GTL_CORE_ORIGIN "prebuilt, imported from ${_gtl_dir}")
    endif()
  endif()
endmacro()
