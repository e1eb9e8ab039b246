// What the proof can run (proof.h): the core holds dp x pp in float32; TP, ZeRO and bf16 are
// labs 06 and 08's code.
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.tp == 1 && config.zero_stage == 0 && !config.sequence_parallel &&
                config.precision == Precision::Fp32,
            "check_provable: the proof runs dp x pp with tp = 1, ZeRO-0, float32 and no SP (the "
            "core has no tensor-parallel layers or ZeRO units), got "
                << describe(config));
}

}  // namespace lab11
