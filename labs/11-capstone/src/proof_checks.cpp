// What the proof can run (proof.h): the core holds what dp x tp x pp needs, every ZeRO stage
// included (FlatParameter, the modules' hooks, the tensor- and sequence-parallel GPT stage), in
// float32; bf16-mixed without ZeRO (a bf16 compute copy per parameter): the core's flat parameter
// holds float32 only, so ZeRO's bf16 state (F8, F9) has nothing to run on.
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.precision == Precision::Fp32 || config.zero_stage == 0,
            "check_provable: the proof runs bf16-mixed without ZeRO only (the core's flat "
            "parameter holds float32: F8's and F9's bf16 state has nothing to run on), got "
                << describe(config));
}

}  // namespace lab11
