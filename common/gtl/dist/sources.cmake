# Distributed runtime: one Communicator interface, in-process / MPI / NCCL backends.
gtl_core_sources(
  CPU gtl/dist/communicator.cpp gtl/dist/reduce.cpp gtl/dist/ring.cpp gtl/dist/in_process.cpp
      gtl/dist/mpi_communicator.cpp gtl/dist/nccl_communicator.cpp gtl/dist/process_grid.cpp
      gtl/dist/launch.cpp
      gtl/dist/progress_queue.cpp
      gtl/dist/trace.cpp
      gtl/dist/module_trace.cpp
      gtl/dist/timeline.cpp
      gtl/dist/sharded_grads.cpp
  CUDA gtl/dist/reduce_kernels.cu)
# timeline.cpp writes the Chrome trace format with nlohmann-json (not part of the public headers).
target_link_libraries(gtl_core PRIVATE nlohmann_json::nlohmann_json)
