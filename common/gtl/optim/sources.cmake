# The optimizers, gradient clipping and loss scaling. They use two reductions of the ops part
# (ops/global_norm, ops/non_finite): build optim together with ops (-DGTL_PARTS="ops;optim").
gtl_core_sources(
  CPU gtl/optim/param.cpp gtl/optim/optimizer.cpp gtl/optim/sgd.cpp gtl/optim/adamw.cpp
      gtl/optim/master_weights.cpp gtl/optim/grad_clip.cpp gtl/optim/loss_scaler.cpp
  CUDA gtl/optim/sgd.cu gtl/optim/adamw.cu gtl/optim/master_weights.cu gtl/optim/grad_clip.cu
       gtl/optim/loss_scaler.cu)
