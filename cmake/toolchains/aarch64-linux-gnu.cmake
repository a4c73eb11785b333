# Cross build for 64-bit ARM Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu) and the arm64 -dev packages installed through
# multiarch (dpkg --add-architecture arm64; scripts/setup-deps.sh --arm64).
# The binaries run here under user-mode emulation: scripts/test-arm64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Debian's multiarch layout: arm64 libraries under /usr/lib/aarch64-linux-gnu,
# the architecture-independent headers (nlohmann-json, gtest) in /usr/include;
# the C library of the cross compiler under /usr/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# CTest (gtest_discover_tests lists each binary's tests at build time) runs
# the arm64 binaries through QEMU; the C library is found under the prefix.
find_program(OSCAR_QEMU_AARCH64 qemu-aarch64)
if(OSCAR_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${OSCAR_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu)
endif()
