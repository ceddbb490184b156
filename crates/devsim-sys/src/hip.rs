//! The HIP runtime API (`hip/hip_runtime_api.h`, `hip/driver_types.h`, ROCm 6 and 7): the subset
//! devsim uses.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use core::ffi::{CStr, c_char, c_int, c_uint, c_void};

/// `hipError_t`, HIP's status code (a C enum, `int`-sized).
pub type hipError_t = c_int;
/// `hipDeviceAttribute_t` (a C enum, `int`-sized).
pub type hipDeviceAttribute_t = c_int;
/// `hipMemcpyKind` (a C enum, `int`-sized).
pub type hipMemcpyKind = c_int;

/// The library's usual name.
pub const LIBRARY: &str = "libamdhip64.so";

/// `hipSuccess`.
pub const hipSuccess: hipError_t = 0;
/// `hipErrorInvalidValue`.
pub const hipErrorInvalidValue: hipError_t = 1;
/// `hipErrorOutOfMemory`.
pub const hipErrorOutOfMemory: hipError_t = 2;
/// `hipErrorInvalidMemcpyDirection`.
pub const hipErrorInvalidMemcpyDirection: hipError_t = 21;
/// `hipErrorNoDevice`: what `hipGetDeviceCount` answers when no GPU is visible.
pub const hipErrorNoDevice: hipError_t = 100;
/// `hipErrorInvalidDevice`.
pub const hipErrorInvalidDevice: hipError_t = 101;
/// `hipErrorLaunchFailure`.
pub const hipErrorLaunchFailure: hipError_t = 719;
/// `hipErrorNotSupported`.
pub const hipErrorNotSupported: hipError_t = 801;
/// `hipErrorUnknown`.
pub const hipErrorUnknown: hipError_t = 999;

/// `hipDeviceAttributeComputeCapabilityMajor` (the ROCm 6 numbering: the 24th name of the
/// CUDA-compatible block, which starts at 0 with `hipDeviceAttributeEccEnabled`).
pub const hipDeviceAttributeComputeCapabilityMajor: hipDeviceAttribute_t = 23;
/// `hipDeviceAttributeComputeCapabilityMinor` (ROCm 6 numbering).
pub const hipDeviceAttributeComputeCapabilityMinor: hipDeviceAttribute_t = 61;
/// `hipDeviceAttributeSharedMemPerBlockOptin` (ROCm 6 numbering).
pub const hipDeviceAttributeSharedMemPerBlockOptin: hipDeviceAttribute_t = 75;

/// `hipMemcpyHostToHost`.
pub const hipMemcpyHostToHost: hipMemcpyKind = 0;
/// `hipMemcpyHostToDevice`.
pub const hipMemcpyHostToDevice: hipMemcpyKind = 1;
/// `hipMemcpyDeviceToHost`.
pub const hipMemcpyDeviceToHost: hipMemcpyKind = 2;
/// `hipMemcpyDeviceToDevice`.
pub const hipMemcpyDeviceToDevice: hipMemcpyKind = 3;
/// `hipMemcpyDefault`: the direction is inferred from the addresses.
pub const hipMemcpyDefault: hipMemcpyKind = 4;

/// Bytes for a `hipDeviceGetName` buffer; `hipDeviceProp_tR0600::name` is `char[256]`.
pub const NAME_BYTES: usize = 256;

/// The oldest HIP major version devsim drives: ROCm 6 renumbered `hipDeviceAttribute_t` and
/// introduced `hipDeviceProp_tR0600`, so an older runtime would answer different questions.
pub const MIN_MAJOR: c_int = 6;

/// `(major, minor)` of a `hipRuntimeGetVersion` answer: `HIP_VERSION` is
/// `major * 10_000_000 + minor * 100_000 + patch` (`hip_version.h`).
pub const fn version_parts(version: c_int) -> (c_int, c_int) {
    (version / 10_000_000, (version / 100_000) % 100)
}

/// The `hipError_t` names and descriptions devsim reports, as `hipGetErrorName` /
/// `hipGetErrorString` spell them. HIP answers every other code with `hipErrorUnknown`.
pub const ERRORS: &[(hipError_t, &CStr, &CStr)] = &[
    (0, c"hipSuccess", c"no error"),
    (1, c"hipErrorInvalidValue", c"invalid argument"),
    (2, c"hipErrorOutOfMemory", c"out of memory"),
    (3, c"hipErrorNotInitialized", c"initialization error"),
    (
        21,
        c"hipErrorInvalidMemcpyDirection",
        c"invalid copy direction for memcpy",
    ),
    (
        100,
        c"hipErrorNoDevice",
        c"no ROCm-capable device is detected",
    ),
    (101, c"hipErrorInvalidDevice", c"invalid device ordinal"),
    (
        200,
        c"hipErrorInvalidImage",
        c"device kernel image is invalid",
    ),
    (201, c"hipErrorInvalidContext", c"invalid device context"),
    (400, c"hipErrorInvalidHandle", c"invalid resource handle"),
    (
        700,
        c"hipErrorIllegalAddress",
        c"an illegal memory access was encountered",
    ),
    (719, c"hipErrorLaunchFailure", c"unspecified launch failure"),
    (801, c"hipErrorNotSupported", c"operation not supported"),
    (999, c"hipErrorUnknown", c"unknown error"),
];

/// `hipUUID`: 16 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipUUID {
    /// The UUID's bytes.
    pub bytes: [c_char; 16],
}

/// `hipDeviceProp_tR0600`, field for field as `hip_runtime_api.h` (ROCm 6) declares it: 1472 bytes
/// on x86-64 Linux, `gcnArchName` at offset 1160. `hipDeviceArch_t` (17 one-bit fields in an
/// `unsigned`) is a `u32` here.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(missing_docs)]
pub struct hipDeviceProp_tR0600 {
    pub name: [c_char; 256],
    pub uuid: hipUUID,
    pub luid: [c_char; 8],
    pub luidDeviceNodeMask: c_uint,
    pub totalGlobalMem: usize,
    pub sharedMemPerBlock: usize,
    pub regsPerBlock: c_int,
    pub warpSize: c_int,
    pub memPitch: usize,
    pub maxThreadsPerBlock: c_int,
    pub maxThreadsDim: [c_int; 3],
    pub maxGridSize: [c_int; 3],
    pub clockRate: c_int,
    pub totalConstMem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub textureAlignment: usize,
    pub texturePitchAlignment: usize,
    pub deviceOverlap: c_int,
    pub multiProcessorCount: c_int,
    pub kernelExecTimeoutEnabled: c_int,
    pub integrated: c_int,
    pub canMapHostMemory: c_int,
    pub computeMode: c_int,
    pub maxTexture1D: c_int,
    pub maxTexture1DMipmap: c_int,
    pub maxTexture1DLinear: c_int,
    pub maxTexture2D: [c_int; 2],
    pub maxTexture2DMipmap: [c_int; 2],
    pub maxTexture2DLinear: [c_int; 3],
    pub maxTexture2DGather: [c_int; 2],
    pub maxTexture3D: [c_int; 3],
    pub maxTexture3DAlt: [c_int; 3],
    pub maxTextureCubemap: c_int,
    pub maxTexture1DLayered: [c_int; 2],
    pub maxTexture2DLayered: [c_int; 3],
    pub maxTextureCubemapLayered: [c_int; 2],
    pub maxSurface1D: c_int,
    pub maxSurface2D: [c_int; 2],
    pub maxSurface3D: [c_int; 3],
    pub maxSurface1DLayered: [c_int; 2],
    pub maxSurface2DLayered: [c_int; 3],
    pub maxSurfaceCubemap: c_int,
    pub maxSurfaceCubemapLayered: [c_int; 2],
    pub surfaceAlignment: usize,
    pub concurrentKernels: c_int,
    pub ECCEnabled: c_int,
    pub pciBusID: c_int,
    pub pciDeviceID: c_int,
    pub pciDomainID: c_int,
    pub tccDriver: c_int,
    pub asyncEngineCount: c_int,
    pub unifiedAddressing: c_int,
    pub memoryClockRate: c_int,
    pub memoryBusWidth: c_int,
    pub l2CacheSize: c_int,
    pub persistingL2CacheMaxSize: c_int,
    pub maxThreadsPerMultiProcessor: c_int,
    pub streamPrioritiesSupported: c_int,
    pub globalL1CacheSupported: c_int,
    pub localL1CacheSupported: c_int,
    pub sharedMemPerMultiprocessor: usize,
    pub regsPerMultiprocessor: c_int,
    pub managedMemory: c_int,
    pub isMultiGpuBoard: c_int,
    pub multiGpuBoardGroupID: c_int,
    pub hostNativeAtomicSupported: c_int,
    pub singleToDoublePrecisionPerfRatio: c_int,
    pub pageableMemoryAccess: c_int,
    pub concurrentManagedAccess: c_int,
    pub computePreemptionSupported: c_int,
    pub canUseHostPointerForRegisteredMem: c_int,
    pub cooperativeLaunch: c_int,
    pub cooperativeMultiDeviceLaunch: c_int,
    pub sharedMemPerBlockOptin: usize,
    pub pageableMemoryAccessUsesHostPageTables: c_int,
    pub directManagedMemAccessFromHost: c_int,
    pub maxBlocksPerMultiProcessor: c_int,
    pub accessPolicyMaxWindowSize: c_int,
    pub reservedSharedMemPerBlock: usize,
    pub hostRegisterSupported: c_int,
    pub sparseHipArraySupported: c_int,
    pub hostRegisterReadOnlySupported: c_int,
    pub timelineSemaphoreInteropSupported: c_int,
    pub memoryPoolsSupported: c_int,
    pub gpuDirectRDMASupported: c_int,
    pub gpuDirectRDMAFlushWritesOptions: c_uint,
    pub gpuDirectRDMAWritesOrdering: c_int,
    pub memoryPoolSupportedHandleTypes: c_uint,
    pub deferredMappingHipArraySupported: c_int,
    pub ipcEventSupported: c_int,
    pub clusterLaunch: c_int,
    pub unifiedFunctionPointers: c_int,
    pub reserved: [c_int; 63],
    pub hipReserved: [c_int; 32],
    pub gcnArchName: [c_char; 256],
    pub maxSharedMemoryPerMultiProcessor: usize,
    pub clockInstructionRate: c_int,
    pub arch: u32,
    pub hdpMemFlushCntl: *mut c_uint,
    pub hdpRegFlushCntl: *mut c_uint,
    pub cooperativeMultiDeviceUnmatchedFunc: c_int,
    pub cooperativeMultiDeviceUnmatchedGridDim: c_int,
    pub cooperativeMultiDeviceUnmatchedBlockDim: c_int,
    pub cooperativeMultiDeviceUnmatchedSharedMem: c_int,
    pub isLargeBar: c_int,
    pub asicRevision: c_int,
}

impl hipDeviceProp_tR0600 {
    /// An all-zero struct (every field is an integer, a byte array or a nullable pointer).
    pub const fn zeroed() -> Self {
        // SAFETY: every field is an integer, an array of integers or a raw pointer, for all of
        // which all-zero bytes are a valid value (0, or null).
        unsafe { core::mem::MaybeUninit::<Self>::zeroed().assume_init() }
    }
}

/// One function-pointer type per symbol, named as the symbol: `fns::hipInit` is the C signature of
/// `hipInit`, transcribed from `hip_runtime_api.h`.
pub mod fns {
    use super::*;

    /// `hipError_t hipInit(unsigned int flags)`.
    pub type hipInit = unsafe extern "C" fn(c_uint) -> hipError_t;
    /// `hipError_t hipRuntimeGetVersion(int *runtimeVersion)`.
    pub type hipRuntimeGetVersion = unsafe extern "C" fn(*mut c_int) -> hipError_t;
    /// `hipError_t hipDriverGetVersion(int *driverVersion)`.
    pub type hipDriverGetVersion = unsafe extern "C" fn(*mut c_int) -> hipError_t;
    /// `hipError_t hipGetDeviceCount(int *count)`.
    pub type hipGetDeviceCount = unsafe extern "C" fn(*mut c_int) -> hipError_t;
    /// `hipError_t hipGetDevice(int *deviceId)`.
    pub type hipGetDevice = unsafe extern "C" fn(*mut c_int) -> hipError_t;
    /// `hipError_t hipSetDevice(int deviceId)`.
    pub type hipSetDevice = unsafe extern "C" fn(c_int) -> hipError_t;
    /// `hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device)`.
    pub type hipDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> hipError_t;
    /// `hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device)`: on ROCm the 16 bytes are the
    /// ASCII characters ROCr shows after `GPU-` (the ASIC serial as 16 hex digits).
    pub type hipDeviceGetUuid = unsafe extern "C" fn(*mut hipUUID, c_int) -> hipError_t;
    /// `hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int deviceId)`.
    pub type hipDeviceGetAttribute =
        unsafe extern "C" fn(*mut c_int, hipDeviceAttribute_t, c_int) -> hipError_t;
    /// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600 *prop, int deviceId)`.
    pub type hipGetDevicePropertiesR0600 =
        unsafe extern "C" fn(*mut hipDeviceProp_tR0600, c_int) -> hipError_t;
    /// `hipError_t hipMalloc(void **ptr, size_t size)`.
    pub type hipMalloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> hipError_t;
    /// `hipError_t hipMemGetInfo(size_t *free, size_t *total)`: the current device.
    pub type hipMemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> hipError_t;
    /// `hipError_t hipFree(void *ptr)`.
    pub type hipFree = unsafe extern "C" fn(*mut c_void) -> hipError_t;
    /// `hipError_t hipMemcpy(void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind)`.
    pub type hipMemcpy =
        unsafe extern "C" fn(*mut c_void, *const c_void, usize, hipMemcpyKind) -> hipError_t;
    /// `hipError_t hipMemset(void *dst, int value, size_t sizeBytes)`.
    pub type hipMemset = unsafe extern "C" fn(*mut c_void, c_int, usize) -> hipError_t;
    /// `hipError_t hipDeviceSynchronize(void)`.
    pub type hipDeviceSynchronize = unsafe extern "C" fn() -> hipError_t;
    /// `const char *hipGetErrorName(hipError_t hip_error)`.
    pub type hipGetErrorName = unsafe extern "C" fn(hipError_t) -> *const c_char;
    /// `const char *hipGetErrorString(hipError_t hipError)`.
    pub type hipGetErrorString = unsafe extern "C" fn(hipError_t) -> *const c_char;
}

#[cfg(test)]
mod tests {
    use core::mem::{offset_of, size_of};

    use super::*;

    /// The ROCm 6 layout devsim and the HIP fake both rely on.
    #[test]
    fn the_r0600_properties_have_the_rocm6_layout() {
        assert_eq!(size_of::<hipDeviceProp_tR0600>(), 1472);
        assert_eq!(offset_of!(hipDeviceProp_tR0600, gcnArchName), 1160);
        assert_eq!(offset_of!(hipDeviceProp_tR0600, warpSize), 308);
        assert_eq!(offset_of!(hipDeviceProp_tR0600, major), 360);
        assert_eq!(offset_of!(hipDeviceProp_tR0600, minor), 364);
    }

    /// The attribute numbers are positions in `hipDeviceAttribute_t`'s CUDA-compatible block, in
    /// the header's order (ROCm 6 renumbered them alphabetically).
    #[test]
    fn the_attribute_numbers_are_their_positions_in_the_rocm6_enum() {
        const CUDA_COMPATIBLE: [&str; 76] = [
            "EccEnabled",
            "AccessPolicyMaxWindowSize",
            "AsyncEngineCount",
            "CanMapHostMemory",
            "CanUseHostPointerForRegisteredMem",
            "ClockRate",
            "ComputeMode",
            "ComputePreemptionSupported",
            "ConcurrentKernels",
            "ConcurrentManagedAccess",
            "CooperativeLaunch",
            "CooperativeMultiDeviceLaunch",
            "DeviceOverlap",
            "DirectManagedMemAccessFromHost",
            "GlobalL1CacheSupported",
            "HostNativeAtomicSupported",
            "Integrated",
            "IsMultiGpuBoard",
            "KernelExecTimeout",
            "L2CacheSize",
            "LocalL1CacheSupported",
            "Luid",
            "LuidDeviceNodeMask",
            "ComputeCapabilityMajor",
            "ManagedMemory",
            "MaxBlocksPerMultiProcessor",
            "MaxBlockDimX",
            "MaxBlockDimY",
            "MaxBlockDimZ",
            "MaxGridDimX",
            "MaxGridDimY",
            "MaxGridDimZ",
            "MaxSurface1D",
            "MaxSurface1DLayered",
            "MaxSurface2D",
            "MaxSurface2DLayered",
            "MaxSurface3D",
            "MaxSurfaceCubemap",
            "MaxSurfaceCubemapLayered",
            "MaxTexture1DWidth",
            "MaxTexture1DLayered",
            "MaxTexture1DLinear",
            "MaxTexture1DMipmap",
            "MaxTexture2DWidth",
            "MaxTexture2DHeight",
            "MaxTexture2DGather",
            "MaxTexture2DLayered",
            "MaxTexture2DLinear",
            "MaxTexture2DMipmap",
            "MaxTexture3DWidth",
            "MaxTexture3DHeight",
            "MaxTexture3DDepth",
            "MaxTexture3DAlt",
            "MaxTextureCubemap",
            "MaxTextureCubemapLayered",
            "MaxThreadsDim",
            "MaxThreadsPerBlock",
            "MaxThreadsPerMultiProcessor",
            "MaxPitch",
            "MemoryBusWidth",
            "MemoryClockRate",
            "ComputeCapabilityMinor",
            "MultiGpuBoardGroupID",
            "MultiprocessorCount",
            "Unused1",
            "PageableMemoryAccess",
            "PageableMemoryAccessUsesHostPageTables",
            "PciBusId",
            "PciDeviceId",
            "PciDomainID",
            "PersistingL2CacheMaxSize",
            "MaxRegistersPerBlock",
            "MaxRegistersPerMultiprocessor",
            "ReservedSharedMemPerBlock",
            "MaxSharedMemoryPerBlock",
            "SharedMemPerBlockOptin",
        ];
        let position = |name: &str| {
            CUDA_COMPATIBLE
                .iter()
                .position(|entry| *entry == name)
                .and_then(|index| c_int::try_from(index).ok())
        };
        assert_eq!(
            position("ComputeCapabilityMajor"),
            Some(hipDeviceAttributeComputeCapabilityMajor)
        );
        assert_eq!(
            position("ComputeCapabilityMinor"),
            Some(hipDeviceAttributeComputeCapabilityMinor)
        );
        assert_eq!(
            position("SharedMemPerBlockOptin"),
            Some(hipDeviceAttributeSharedMemPerBlockOptin)
        );
    }

    #[test]
    fn versions_split_into_major_and_minor() {
        assert_eq!(version_parts(50_221_153), (5, 2));
        assert_eq!(version_parts(60_443_483), (6, 4));
        assert_eq!(version_parts(70_000_000), (7, 0));
    }
}
