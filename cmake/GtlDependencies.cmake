# Every dependency comes from a Debian package or the CUDA toolkit; nothing is downloaded.
# scripts/install-deps.sh installs the Debian packages named in the messages below.
find_package(Threads REQUIRED)

find_package(GTest REQUIRED)  # libgtest-dev libgmock-dev
if(GTL_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)  # libbenchmark-dev
endif()
find_package(nlohmann_json 3 REQUIRED)  # nlohmann-json3-dev
find_package(yaml-cpp REQUIRED)         # libyaml-cpp-dev
find_path(GTL_CLI11_INCLUDE CLI/CLI.hpp REQUIRED)  # libcli11-dev (header-only)
add_library(gtl_cli11 INTERFACE)
target_include_directories(gtl_cli11 SYSTEM INTERFACE ${GTL_CLI11_INCLUDE})

# OpenBLAS: the honest CPU GEMM baseline (libopenblas-dev).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(GTL_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas REQUIRED)

# OpenMPI (libopenmpi-dev openmpi-bin): optional, enables the MPI communicator backend.
set(GTL_HAVE_MPI OFF)
if(GTL_WITH_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(GTL_HAVE_MPI ON)
  endif()
endif()

# CUDA toolkit libraries: cuBLAS/cuBLASLt and NVTX ship with the toolkit; cuDNN and NCCL are
# separate packages and optional.
set(GTL_HAVE_CUDNN OFF)
set(GTL_HAVE_NCCL OFF)
set(GTL_HAVE_NVTX OFF)
if(GTL_HAVE_CUDA)
  find_path(GTL_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(GTL_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(GTL_CUDNN_INCLUDE AND GTL_CUDNN_LIB)
    set(GTL_HAVE_CUDNN ON)
  endif()
  find_path(GTL_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(GTL_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(GTL_NCCL_INCLUDE AND GTL_NCCL_LIB)
    set(GTL_HAVE_NCCL ON)
  endif()
  if(TARGET CUDA::nvtx3)
    set(GTL_HAVE_NVTX ON)
  endif()
endif()
