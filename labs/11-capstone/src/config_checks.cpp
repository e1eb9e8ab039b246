// The preconditions every model of the lab shares (capstone.h, check_config), and the names of
// configurations in messages. Given: part of the pristine lab.
#include <sstream>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

void check_config(const ModelSpec& model, const Config& c) {
  GTL_CHECK(model.layers >= 1 && model.dim >= 1 && model.heads >= 1 && model.vocab >= 1 &&
                model.context >= 1 && model.dim % model.heads == 0,
            "lab11: " << describe(model) << " is not a GPT (every size >= 1, H divides D)");
  GTL_CHECK(c.dp >= 1 && c.tp >= 1 && c.pp >= 1 && c.micro_batch >= 1 && c.accumulation >= 1,
            "lab11: " << describe(c) << ": dp, tp, pp, micro-batch and accumulation must be >= 1");
  GTL_CHECK(c.zero_stage >= 0 && c.zero_stage <= 3,
            "lab11: ZeRO stage " << c.zero_stage << " (0 to 3)");
  GTL_CHECK(model.heads % c.tp == 0, "lab11: tp " << c.tp << " does not divide the " << model.heads
                                                  << " heads (lab 08 never cuts a head)");
  GTL_CHECK(model.vocab % c.tp == 0,
            "lab11: tp " << c.tp << " does not divide the vocabulary of " << model.vocab
                         << " (lab 08's vocabulary-parallel embedding does not pad)");
  GTL_CHECK(model.layers % c.pp == 0,
            "lab11: pp " << c.pp << " does not divide the " << model.layers << " blocks");
  GTL_CHECK(!c.sequence_parallel || model.context % c.tp == 0,
            "lab11: sequence parallelism over tp " << c.tp
                                                   << " needs tp to divide T = " << model.context);
}

std::string describe(const Config& c) {
  std::ostringstream s;
  s << "dp " << c.dp << " x tp " << c.tp << " x pp " << c.pp << ", ZeRO-" << c.zero_stage
    << (c.sequence_parallel ? ", SP" : "") << ", micro-batch " << c.micro_batch << " x "
    << c.accumulation << (c.precision == Precision::Bf16Mixed ? ", bf16-mixed" : ", fp32")
    << (c.activation_checkpointing ? ", checkpointed" : "");
  return s.str();
}

std::string describe(const ModelSpec& m) {
  std::ostringstream s;
  s << "GPT L " << m.layers << ", D " << m.dim << ", H " << m.heads << ", V " << m.vocab << ", T "
    << m.context << (m.tied_head ? ", tied" : ", untied");
  return s.str();
}

}  // namespace lab11
