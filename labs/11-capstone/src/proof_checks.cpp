// What the proof can run (proof.h): the core holds what dp x tp x pp needs in float32, every ZeRO
// stage included (FlatParameter, the modules' hooks, the tensor- and sequence-parallel GPT
// stage); the memory model's bf16 transients are not exact yet (F15).
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.precision == Precision::Fp32,
            "check_provable: the proof runs dp x tp x pp (with or without SP) in float32 (under "
            "bf16 the memory model's transients are not exact yet: F15), got "
                << describe(config));
}

}  // namespace lab11
