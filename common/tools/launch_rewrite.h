// The source rewrite that lets the CPU emulator (common/emulator/cuda_emulator.h) compile a CUDA
// kernel file as plain C++: what `gtl_add_emulated_test` (cmake/GtlEmulator.cmake) runs on each
// kernel file, through the emulate_launches tool, before compiling the copy.
//
// clang-format off
//   kernel<<<grid, block, smem, stream>>>(args)  ->  emu::Launcher(kernel, grid, block, smem, stream)(args)
//   extern __shared__ [__align__(n)] T name[];     ->  T* const name = static_cast<T*>(emu::dynamic_shared());
// clang-format on
//
// Why a scan and not one regular expression: a launch configuration may itself contain '>'
// (static_cast<int>(blocks)), a kernel may be a template (`scale<float, 3>`) or namespaced
// (`detail::axpy<double>`), and nothing but the name just before `<<<` and the `(` just after
// `>>>` says it is a launch at all. A `<<<` with no kernel name before it or no `(` after it (in a
// comment or a string, say) is left as it is.
//
// Plain C++17, no dependency: the tool is built and run on the build machine.
#pragma once

#include <string>
#include <string_view>

namespace gtl::emulator {

// Every `name<<<config>>>(` becomes `emu::Launcher(name, config)(`. `name` is the identifier
// chain (`a::b::kernel`, optionally with one template argument list `<...>` holding no '<', '>'
// or ';') that ends, before optional whitespace, right at `<<<`; the configuration is copied as it
// is, up to the first `>>>`.
std::string rewrite_launches(std::string_view text);

// Every `extern __shared__ T name[];` becomes a pointer to the launch's dynamic shared memory.
std::string rewrite_extern_shared(std::string_view text);

// The emulated copy of a kernel file: both rewrites, after a `#line 1 "<source_path>"` so that
// compiler errors and sanitizer reports name the original file and line, not the copy.
std::string emulated_copy(std::string_view text, std::string_view source_path);

}  // namespace gtl::emulator
