// What the proof can run (proof.h): the core holds what dp x pp needs in float32, ZeRO-1 and -2
// included (FlatParameter, the modules' hooks); the TP layers, ZeRO-3's gathers and the bf16 forms
// are labs 08's and 06's code.
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.tp == 1 && config.zero_stage <= 2 && !config.sequence_parallel &&
                config.precision == Precision::Fp32,
            "check_provable: the proof runs dp x pp with tp = 1, ZeRO-0 to -2, float32 and no SP "
            "(the tensor-parallel layers, ZeRO-3's gathers and the bf16 forms are "
            "labs 08's and 06's code), got "
                << describe(config));
}

}  // namespace lab11
