// What the proof can run (proof.h): the core holds what dp x pp needs in float32, every ZeRO stage
// included (FlatParameter, the modules' hooks); the TP layers and the bf16 forms are labs 08's
// and 06's code.
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.tp == 1 && !config.sequence_parallel && config.precision == Precision::Fp32,
            "check_provable: the proof runs dp x pp with tp = 1, float32 and no SP "
            "(the tensor-parallel layers and the bf16 forms are labs 08's and 06's "
            "code), got "
                << describe(config));
}

}  // namespace lab11
