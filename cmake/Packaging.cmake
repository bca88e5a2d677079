# `cpack -G DEB` in the build folder: one Debian package with the layer (and its
# implicit-layer manifest in /usr/share/vulkan/implicit_layer.d, so every app gets
# it unless DISABLE_VK_LAYER_COOPMAT_MAINTENANCE1=1), coopmat-lower, coopmat-info,
# the samples under /usr/libexec/coopmat-maintenance1 and the docs.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/design.md ${PROJECT_SOURCE_DIR}/docs/performance.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/coopmat-maintenance1)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME coopmat-maintenance1)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Vulkan layer emulating VK_EXT_cooperative_matrix_maintenance1 on KHR cooperative matrix drivers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "coopmat-maintenance1 developers")
set(CPACK_DEBIAN_PACKAGE_SECTION graphics)
# What the binaries link (dpkg-shlibdeps is not assumed to be installed).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libvulkan1 (>= 1.4.309), libspirv-cross-c-shared0")
include(CPack)
