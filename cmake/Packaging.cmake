# `cpack` in the build folder (scripts/package, docs/packaging.md). On Linux: one Debian
# package and one tarball (`cmake --install` tree) with the layer (and its implicit-layer
# manifest in share/vulkan/implicit_layer.d, so every app gets it unless
# DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1), coopmat-lower, coopmat-info, the samples
# under libexec/coopmat-maintenance1 and the docs. They copy what was built: cpack runs in
# a root with dpkg-dev, which must not rebuild what the toolchain root built.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/design.md ${PROJECT_SOURCE_DIR}/docs/performance.md
              ${PROJECT_SOURCE_DIR}/docs/packaging.md ${PROJECT_SOURCE_DIR}/docs/selftest.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/coopmat-maintenance1)

set(CPACK_PACKAGE_NAME coopmat-maintenance1)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Vulkan layer emulating VK_EXT_cooperative_matrix_maintenance1 on KHR cooperative matrix drivers")
# Values reach the package's scripts as written here (the NSIS commands' backslashes).
set(CPACK_VERBATIM_VARIABLES ON)

if(WIN32)
  # `cpack -G NSIS` in the Windows build (docs/windows.md): an installer of the DLL,
  # its manifest and coopmat-lower.exe that registers the manifest as an implicit
  # layer (HKLM, or HKCU with /CURRENTUSER) and an uninstaller that removes both.
  # cmake/windows-installer.nsh has the registration.
  set(CPACK_GENERATOR NSIS)
  set(CPACK_PACKAGE_VENDOR coopmat-maintenance1)
  set(CPACK_PACKAGE_INSTALL_DIRECTORY coopmat-maintenance1)
  set(CPACK_PACKAGE_INSTALL_REGISTRY_KEY coopmat-maintenance1)
  set(CPACK_NSIS_INSTALL_ROOT "$PROGRAMFILES64")  # a 64-bit DLL
  set(CPACK_NSIS_DISPLAY_NAME "Vulkan layer coopmat-maintenance1")
  set(CPACK_NSIS_PACKAGE_NAME "Vulkan layer coopmat-maintenance1 ${PROJECT_VERSION}")
  set(CPACK_STRIP_FILES ON)  # without the debug info: 4 MB instead of 12 (the DLL alone has 40 MB of it)
  set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)  # an upgrade leaves no second registration
  # A 64-bit installer, as the DLL is: it needs no WOW64 (a 32-bit one crashed at its first
  # instruction under Wine on hosts without 32-bit code segments), and its registry view
  # is the one the 64-bit loader reads.
  set(CPACK_NSIS_DEFINES "Target amd64-unicode
!define COOPMAT_UNINSTALL_KEY \"Software\\Microsoft\\Windows\\CurrentVersion\\Uninstall\\coopmat-maintenance1\"
!include \"${PROJECT_SOURCE_DIR}/cmake/windows-installer.nsh\"")
  set(CPACK_NSIS_EXTRA_PREINSTALL_COMMANDS "!insertmacro CoopmatChooseUsers")
  set(CPACK_NSIS_EXTRA_INSTALL_COMMANDS "!insertmacro CoopmatRegisterLayer")
  set(CPACK_NSIS_EXTRA_UNINSTALL_COMMANDS "!insertmacro CoopmatUnregisterLayer")
else()
  set(CPACK_GENERATOR DEB TGZ)
  set(CPACK_STRIP_FILES ON)  # 8 MB of layer instead of 34 (its debug info)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "coopmat-maintenance1 developers")
  set(CPACK_DEBIAN_PACKAGE_SECTION graphics)
  # Depends as dpkg-shlibdeps reads them from the binaries (glibc and the Vulkan loader,
  # with the versions their symbols need), never written here; cmake/cpack_generators.cmake
  # stops a package made without it.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  # The tarball and its one top folder; the Debian package is named as Debian names them.
  set(CPACK_PACKAGE_FILE_NAME ${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR})
  set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/cpack_generators.cmake)
endif()
include(CPack)
