# Cross-compiling for 64-bit Windows with Debian's MinGW-w64 (the posix thread model,
# for std::thread and std::mutex). scripts/windows uses it; COOPMAT_WINDOWS_PREFIX
# names a prefix holding the Windows side's dependencies (there: the Vulkan and
# SPIR-V headers, docs/windows.md).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(triple x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${triple}-gcc-posix)
set(CMAKE_CXX_COMPILER ${triple}-g++-posix)
set(CMAKE_RC_COMPILER ${triple}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${triple} ${COOPMAT_WINDOWS_PREFIX})
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES COOPMAT_WINDOWS_PREFIX)
# Programs (glslangValidator, python3) run here; libraries, headers and packages come
# from the Windows side only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The C++ and GCC runtimes linked in: the executables and the DLL run without
# MinGW's DLLs beside them (a Windows machine has none).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
# Wine runs the tests (ctest's CROSSCOMPILING_EMULATOR).
find_program(WINE_EXECUTABLE NAMES wine)
if(WINE_EXECUTABLE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${WINE_EXECUTABLE})
endif()
