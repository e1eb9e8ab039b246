# Distributed runtime: one Communicator interface, in-process / MPI / NCCL backends.
gtl_core_sources(
  CPU gtl/dist/communicator.cpp gtl/dist/reduce.cpp gtl/dist/ring.cpp gtl/dist/in_process.cpp
      gtl/dist/mpi_communicator.cpp gtl/dist/nccl_communicator.cpp gtl/dist/process_grid.cpp
      gtl/dist/launch.cpp gtl/dist/trace.cpp gtl/dist/progress_queue.cpp
  CUDA gtl/dist/reduce_kernels.cu)
