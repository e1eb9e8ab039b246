// A communicator whose all-reduce weighs rank r's contribution by a factor w(r): its Sum returns
// sum_r w(r) x_r and its Avg that sum over N. Every other operation is the wrapped communicator's.
//
// Why a test needs it: with in-process ranks (threads of one process) a gradient sync could
// produce the right average without using what its all-reduce returned, from other ranks'
// tensors reached through shared memory, say, while still making the expected calls. Under this
// communicator the right answer is the weighted one, which only the collective's result carries:
// a gradient that is not what the all-reduce left fails. Weights are small integers and the tests'
// gradients are integers over a world of 4, so the expected values are exact whatever the order
// of the division and the sum.
#pragma once

#include <memory>
#include <string>

#include "gtl/distributed/communicator.h"
#include "gtl/ops/elementwise.h"

namespace lab05::testing {

class WeightedAllReduce : public gtl::dist::Communicator {
 public:
  // w(r) = r + 1.
  static float weight(int rank) { return static_cast<float>(rank + 1); }

  explicit WeightedAllReduce(gtl::dist::Communicator& inner)
      : Communicator(inner.rank(), inner.world_size()), inner_(inner) {
    set_timeout(inner.timeout());
    set_deterministic(inner.deterministic());
  }
  ~WeightedAllReduce() override { stop_progress_thread(); }

  std::string backend() const override { return inner_.backend(); }

 protected:
  void do_all_reduce(const gtl::Tensor& tensor, gtl::dist::ReduceOp op) override {
    if (op == gtl::dist::ReduceOp::Sum || op == gtl::dist::ReduceOp::Avg) {
      gtl::ops::scale_(tensor, weight(rank()));  // in place: the collective overwrites it
    }
    inner_.all_reduce(tensor, op);
  }
  void do_reduce_scatter(const gtl::Tensor& input, const gtl::Tensor& output,
                         gtl::dist::ReduceOp op) override {
    inner_.reduce_scatter(input, output, op);
  }
  void do_all_gather(const gtl::Tensor& input, const gtl::Tensor& output) override {
    inner_.all_gather(input, output);
  }
  void do_broadcast(const gtl::Tensor& tensor, int root) override {
    inner_.broadcast(tensor, root);
  }
  void do_barrier() override { inner_.barrier(); }
  void do_send(const gtl::Tensor& tensor, int dst) override { inner_.send(tensor, dst); }
  void do_recv(const gtl::Tensor& tensor, int src) override { inner_.recv(tensor, src); }
  void do_send_recv(const gtl::Tensor& send, int dst, const gtl::Tensor& recv, int src) override {
    inner_.send_recv(send, dst, recv, src);
  }
  std::unique_ptr<gtl::dist::Communicator> do_split(int, int) override {
    throw gtl::Error("WeightedAllReduce: split is not part of this test");
  }

 private:
  gtl::dist::Communicator& inner_;
};

}  // namespace lab05::testing
