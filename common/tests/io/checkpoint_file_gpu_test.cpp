// CheckpointFile with GPU tensors: saved from device memory, loaded onto cuda:0, bit for bit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "gtl/io/checkpoint_file.h"
#include "gtl_test.h"

namespace gtl::io {
namespace {

TEST(CheckpointGpu, SaveFromAndLoadOntoTheGpu) {
  GTL_REQUIRE_GPU();
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("gtl_ckpt_gpu_" + std::to_string(::getpid()) + ".bin"))
                               .string();
  Generator gen(5);
  const Tensor w = Tensor::normal({64, 33}, gen, 0.f, 1.f, DType::Float32, Device::cuda(0));
  const Tensor h = Tensor::normal({17}, gen, 0.f, 1.f, DType::BFloat16, Device::cuda(0));
  CheckpointFile c;
  c.put("w", w);
  c.put("h", h);
  c.save(path);

  const CheckpointFile back = CheckpointFile::load(path);
  std::filesystem::remove(path);
  for (const auto& [name, original] : {std::pair{"w", w}, std::pair{"h", h}}) {
    const Tensor loaded = back.get(name, Device::cuda(0));
    EXPECT_TRUE(loaded.is_cuda()) << name << " should be loaded onto cuda:0";
    const Tensor a = loaded.to(Device::cpu()), b = original.to(Device::cpu());
    EXPECT_EQ(a.dtype(), b.dtype());
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), b.nbytes()), 0)
        << name << " changed between the GPU, the file and the GPU again";
  }
  Tensor param = Tensor::zeros({64, 33}, DType::Float32, Device::cuda(0));
  back.get_into("w", param);  // how a trainer restores a parameter in place
  testing::expect_close(param, w, {0.0, 0.0}, "w restored into a GPU parameter");
}

}  // namespace
}  // namespace gtl::io
