# The optimizers, gradient clipping and loss scaling, with the two reductions they need
# (ops/global_norm and ops/non_finite, listed here because this part owns them).
gtl_core_sources(
  CPU gtl/ops/global_norm.cpp gtl/ops/non_finite.cpp
      gtl/optim/param.cpp gtl/optim/optimizer.cpp gtl/optim/sgd.cpp gtl/optim/adamw.cpp
      gtl/optim/master_weights.cpp gtl/optim/grad_clip.cpp gtl/optim/loss_scaler.cpp
  CUDA gtl/ops/global_norm.cu gtl/ops/non_finite.cu
       gtl/optim/sgd.cu gtl/optim/adamw.cu gtl/optim/master_weights.cu gtl/optim/grad_clip.cu
       gtl/optim/loss_scaler.cu)
