# Distributed runtime: one Communicator interface, in-process / MPI / NCCL backends.
gtl_core_sources(
  CPU gtl/distributed/communicator.cpp gtl/distributed/reduce.cpp gtl/distributed/ring.cpp gtl/distributed/in_process.cpp
      gtl/distributed/mpi_communicator.cpp gtl/distributed/nccl_communicator.cpp gtl/distributed/process_grid.cpp
      gtl/distributed/launch.cpp
      gtl/distributed/progress_queue.cpp
      gtl/distributed/trace.cpp
      gtl/distributed/trace_text.cpp
      gtl/distributed/module_trace.cpp
      gtl/distributed/timeline.cpp
      gtl/distributed/timeline_svg.cpp
      gtl/distributed/sharded_grads.cpp
  CUDA gtl/distributed/reduce_kernels.cu)
# timeline.cpp writes the Chrome trace format with nlohmann-json (not part of the public headers).
target_link_libraries(gtl_core PRIVATE nlohmann_json::nlohmann_json)
