# Turns the CUDA backend on or off and chooses the architectures to compile for.
#
# Architectures: whatever the user passes in CMAKE_CUDA_ARCHITECTURES wins. Otherwise
#   - `native` when nvidia-smi sees a GPU (compile exactly for the GPUs in this machine);
#   - `75-virtual` on a machine without a GPU: PTX for sm_75 (the oldest CUDA 13 supports),
#     which every newer GPU JIT-compiles on first load. It skips ptxas, which keeps a
#     2-core CI build fast, and still runs on a T4 (sm_75) as on an H100 (sm_90).
set(GTL_HAVE_CUDA OFF)
if(NOT GTL_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      find_program(GTL_NVIDIA_SMI nvidia-smi)
      set(_gtl_gpu_visible OFF)
      if(GTL_NVIDIA_SMI)
        execute_process(COMMAND ${GTL_NVIDIA_SMI} -L OUTPUT_VARIABLE _smi RESULT_VARIABLE _rc
                        ERROR_QUIET)
        if(_rc EQUAL 0 AND _smi MATCHES "GPU 0")
          set(_gtl_gpu_visible ON)
        endif()
      endif()
      if(_gtl_gpu_visible)
        set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures")
      else()
        set(CMAKE_CUDA_ARCHITECTURES 75-virtual CACHE STRING "CUDA architectures")
      endif()
    endif()
    enable_language(CUDA)
    # The core's headers are C++20 and .cu files include them. CMake 3.25 predates nvcc's C++20
    # support, so tell it the flag for that dialect.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(GTL_HAVE_CUDA ON)
  elseif(GTL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GTL_CUDA=ON but no CUDA compiler was found. Install the CUDA toolkit "
                        "(nvcc on PATH or CMAKE_CUDA_COMPILER set), or configure with -DGTL_CUDA=OFF.")
  endif()
endif()
