// What the proof can run (proof.h): the core holds what dp x pp needs in float32, every ZeRO stage
// included (FlatParameter, the modules' hooks); the TP layers are lab 08's code, and the memory
// model's bf16 transients are not exact yet (F15).
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.tp == 1 && !config.sequence_parallel && config.precision == Precision::Fp32,
            "check_provable: the proof runs dp x pp with tp = 1, float32 and no SP "
            "(the tensor-parallel layers are lab 08's code; under bf16 the memory model's "
            "transients are not exact yet: F15), got "
                << describe(config));
}

}  // namespace lab11
