//! The CUDA driver API (`cuda.h`, CUDA 12/13): the subset devsim uses.
#![allow(non_camel_case_types)]

use core::ffi::{CStr, c_char, c_int, c_uint, c_void};

/// `CUresult`, the driver API's status code (`typedef enum cudaError_enum CUresult`).
pub type CUresult = c_int;
/// `CUdevice`, a device handle (`typedef int CUdevice_v1`).
pub type CUdevice = c_int;
/// `CUcontext`, an opaque context handle (`typedef struct CUctx_st *CUcontext`).
pub type CUcontext = *mut c_void;
/// `CUdeviceptr`, a device address (`typedef unsigned long long CUdeviceptr_v2` on 64-bit).
pub type CUdeviceptr = u64;
/// `CUdevice_attribute` (a C enum, `int`-sized).
pub type CUdevice_attribute = c_int;

/// `CUuuid`: a device's 16-byte UUID (`struct CUuuid_st { char bytes[16]; }`). NVML and
/// `CUDA_VISIBLE_DEVICES` spell it `GPU-` and the bytes as `8-4-4-4-12` lower-case hex digits.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUuuid {
    /// The UUID's bytes.
    pub bytes: [c_char; 16],
}

/// The library's usual name (its SONAME).
pub const LIBRARY: &str = "libcuda.so.1";

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CUresult = 0;
/// `CUDA_ERROR_INVALID_VALUE`.
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
/// `CUDA_ERROR_NOT_INITIALIZED`: a call before a successful `cuInit`.
pub const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
/// `CUDA_ERROR_NO_DEVICE`: no CUDA device is visible.
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
/// `CUDA_ERROR_INVALID_DEVICE`: an ordinal or handle that names no device.
pub const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
/// `CUDA_ERROR_INVALID_CONTEXT`: no context is current, or a handle the driver never made.
pub const CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
/// `CUDA_ERROR_LAUNCH_FAILED`.
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
/// `CUDA_ERROR_NOT_SUPPORTED`.
pub const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
/// `CUDA_ERROR_UNKNOWN`.
pub const CUDA_ERROR_UNKNOWN: CUresult = 999;

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: CUdevice_attribute = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: CUdevice_attribute = 76;
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
pub const CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: CUdevice_attribute = 97;

/// Bytes for a `cuDeviceGetName` buffer; `cudaDeviceProp::name` is `char[256]`.
pub const NAME_BYTES: usize = 256;

/// The `CUresult` names and descriptions devsim reports, as `cuda.h` and the driver's
/// `cuGetErrorName` / `cuGetErrorString` spell them.
pub const ERRORS: &[(CUresult, &CStr, &CStr)] = &[
    (0, c"CUDA_SUCCESS", c"no error"),
    (1, c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
    (2, c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
    (3, c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error"),
    (4, c"CUDA_ERROR_DEINITIALIZED", c"driver shutting down"),
    (
        46,
        c"CUDA_ERROR_DEVICE_UNAVAILABLE",
        c"CUDA-capable device(s) is/are busy or unavailable",
    ),
    (
        100,
        c"CUDA_ERROR_NO_DEVICE",
        c"no CUDA-capable device is detected",
    ),
    (101, c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal"),
    (
        200,
        c"CUDA_ERROR_INVALID_IMAGE",
        c"device kernel image is invalid",
    ),
    (
        201,
        c"CUDA_ERROR_INVALID_CONTEXT",
        c"invalid device context",
    ),
    (
        400,
        c"CUDA_ERROR_INVALID_HANDLE",
        c"invalid resource handle",
    ),
    (
        700,
        c"CUDA_ERROR_ILLEGAL_ADDRESS",
        c"an illegal memory access was encountered",
    ),
    (
        719,
        c"CUDA_ERROR_LAUNCH_FAILED",
        c"unspecified launch failure",
    ),
    (801, c"CUDA_ERROR_NOT_SUPPORTED", c"operation not supported"),
    (999, c"CUDA_ERROR_UNKNOWN", c"unknown error"),
];

/// One function-pointer type per symbol, named as the symbol: `fns::cuInit` is the C signature of
/// `cuInit`, transcribed from `cuda.h`.
pub mod fns {
    use super::*;

    /// `CUresult cuInit(unsigned int Flags)`.
    pub type cuInit = unsafe extern "C" fn(c_uint) -> CUresult;
    /// `CUresult cuDriverGetVersion(int *driverVersion)`.
    pub type cuDriverGetVersion = unsafe extern "C" fn(*mut c_int) -> CUresult;
    /// `CUresult cuDeviceGetCount(int *count)`.
    pub type cuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> CUresult;
    /// `CUresult cuDeviceGet(CUdevice *device, int ordinal)`.
    pub type cuDeviceGet = unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult;
    /// `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
    pub type cuDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CUresult;
    /// `CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)`.
    pub type cuDeviceGetUuid_v2 = unsafe extern "C" fn(*mut CUuuid, CUdevice) -> CUresult;
    /// `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
    pub type cuDeviceGetAttribute =
        unsafe extern "C" fn(*mut c_int, CUdevice_attribute, CUdevice) -> CUresult;
    /// `CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)`.
    pub type cuDevicePrimaryCtxRetain = unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult;
    /// `CUresult cuCtxGetCurrent(CUcontext *pctx)`.
    pub type cuCtxGetCurrent = unsafe extern "C" fn(*mut CUcontext) -> CUresult;
    /// `CUresult cuCtxSetCurrent(CUcontext ctx)`.
    pub type cuCtxSetCurrent = unsafe extern "C" fn(CUcontext) -> CUresult;
    /// `CUresult cuCtxGetDevice(CUdevice *device)`.
    pub type cuCtxGetDevice = unsafe extern "C" fn(*mut CUdevice) -> CUresult;
    /// `CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)`.
    pub type cuMemAlloc_v2 = unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult;
    /// `CUresult cuMemGetInfo_v2(size_t *free, size_t *total)`: the current context's device.
    pub type cuMemGetInfo_v2 = unsafe extern "C" fn(*mut usize, *mut usize) -> CUresult;
    /// `CUresult cuMemFree_v2(CUdeviceptr dptr)`.
    pub type cuMemFree_v2 = unsafe extern "C" fn(CUdeviceptr) -> CUresult;
    /// `CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)`.
    pub type cuMemcpyHtoD_v2 = unsafe extern "C" fn(CUdeviceptr, *const c_void, usize) -> CUresult;
    /// `CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)`.
    pub type cuMemcpyDtoH_v2 = unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize) -> CUresult;
    /// `CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)`.
    pub type cuMemsetD8_v2 = unsafe extern "C" fn(CUdeviceptr, u8, usize) -> CUresult;
    /// `CUresult cuCtxSynchronize(void)`.
    pub type cuCtxSynchronize = unsafe extern "C" fn() -> CUresult;
    /// `CUresult cuGetErrorName(CUresult error, const char **pStr)`.
    pub type cuGetErrorName = unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult;
    /// `CUresult cuGetErrorString(CUresult error, const char **pStr)`.
    pub type cuGetErrorString = unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult;
}
