# gtl::train: the training step, evaluation and resumable training state.
gtl_core_sources(CPU gtl/train/trainer.cpp gtl/train/training_state.cpp)
