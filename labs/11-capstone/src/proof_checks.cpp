// What the proof can run (proof.h): the core holds what dp x tp x pp needs, every ZeRO stage
// included (FlatParameter, the modules' hooks, the tensor- and sequence-parallel GPT stage), in
// float32; bf16-mixed without ZeRO (a bf16 compute copy per parameter). The twins do not run
// bf16-mixed under ZeRO, so ZeRO's bf16 state (F8, F9) is not measured by them.
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

void check_provable(const ModelSpec& model, const Config& config) {
  check_config(model, config);
  GTL_CHECK(config.precision == Precision::Fp32 || config.zero_stage == 0,
            "check_provable: the proof runs bf16-mixed without ZeRO only (F8's and F9's bf16 "
            "state stays a rule of the model), got "
                << describe(config));
}

}  // namespace lab11
