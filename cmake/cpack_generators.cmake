# Read by cpack once per generator (CPACK_PROJECT_CONFIG_FILE, cmake/Packaging.cmake).
if(CPACK_GENERATOR STREQUAL "DEB")
  # The Debian package installs under /usr; the tarball is the tree `cmake --install`
  # writes, to unpack into any prefix (/usr/local, ~/.local: the manifest's library_path
  # is relative to its folder).
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  # Without dpkg-shlibdeps CPack would write a package with no Depends at all.
  find_program(COOPMAT_DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(NOT COOPMAT_DPKG_SHLIBDEPS)
    message(FATAL_ERROR "the Debian package's Depends come from dpkg-shlibdeps (dpkg-dev), which this system lacks: "
                        "scripts/package makes the packages in a toolchain root that has it")
  endif()
endif()
