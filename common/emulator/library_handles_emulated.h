// What the emulated cuBLAS and cuDNN do alike with the objects they hand out (handles and
// descriptors) and with the settings a handle keeps (its stream; cuBLAS's math mode). The two
// libraries answer the same mistakes with statuses of their own (a null handle is
// CUBLAS_STATUS_NOT_INITIALIZED to cuBLAS and CUDNN_STATUS_BAD_PARAM to cuDNN), so every call here
// takes its library's statuses. Internal to common/emulator: cublas_emulated.cpp and
// cudnn_emulated.cpp include it, the code they emulate never does.
#pragma once

namespace emu {

// The statuses one library returns for the mistakes these calls check.
template <typename Status>
struct HandleStatuses {
  Status success;
  Status no_handle;      // the handle passed is null
  Status null_argument;  // another pointer argument is null
};

// *out = a new T: cublasCreate, cudnnCreate and cudnnCreate*Descriptor.
template <typename T, typename Status>
Status create_object(T** out, const HandleStatuses<Status>& status) {
  if (out == nullptr) return status.null_argument;
  *out = new T;
  return status.success;
}

// handle->*setting = value: cublasSetStream, cudnnSetStream.
template <typename Handle, typename Setting, typename Status>
Status write_setting(Handle* handle, Setting Handle::*setting, Setting value,
                     const HandleStatuses<Status>& status) {
  if (handle == nullptr) return status.no_handle;
  handle->*setting = value;
  return status.success;
}

// *out = handle->*setting: cublasGetStream, cublasGetMathMode, cudnnGetStream.
template <typename Handle, typename Setting, typename Status>
Status read_setting(const Handle* handle, Setting Handle::*setting, Setting* out,
                    const HandleStatuses<Status>& status) {
  if (handle == nullptr) return status.no_handle;
  if (out == nullptr) return status.null_argument;
  *out = handle->*setting;
  return status.success;
}

}  // namespace emu
