# Packages of the installed layout (cmake/install.cmake), made by CPack: `cpack -G DEB` (a .deb
# for Debian/Ubuntu laptops; its Depends come from dpkg-shlibdeps on what ferry links) and
# `cpack -G TGZ` (ferry-<version>-linux-<arch>.tar.gz: relocatable, the libraries ferry links
# bundled in lib/ferry/ beside it, cmake/bundle_libraries.cmake). scripts/package.sh makes both.
set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VENDOR "the ferry authors")
set(CPACK_PACKAGE_CONTACT "ferry maintainers <maintainers@users.noreply.a-seed-540af44e.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "edit locally, sync, run, debug and train on a remote GPU box over SSH")
set(CPACK_PACKAGE_DESCRIPTION "ferry is one native helper between an editor (VS Code, PyCharm,
CLion, Neovim or any LSP client) and a rented GPU box: incremental sync
on save, remote runs that survive a dropped link, tunnels for debuggers,
Jupyter and TensorBoard, GPU monitoring, cost and autostop, and a
LibTorch trainer driven by JSON configs, all over one SSH link.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/;/node_modules/")

# The Debian package: /usr, dependencies from the libraries ferry links.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The OpenSSH client: ssh-keygen for keys, and ssh for the bulk lanes and tunnel master ferry
# uses when it is there (libssh2 alone otherwise): recommended, not needed. libcurl4: webhook
# notifications load it on the first POST (not linked: it cost every command ~4 ms at start).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client, libcurl4")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# What Debian policy wants beside the files (lintian): the changelog, and overrides saying why the
# agents are static and one is for another architecture (ferry uploads them to boxes; they never
# run on the machine the package is installed on).
set(ferry_changelog ${CMAKE_BINARY_DIR}/packaging/changelog.Debian)
string(TIMESTAMP ferry_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${ferry_changelog}
  "ferry (${PROJECT_VERSION}-1) unstable; urgency=medium\n\n"
  "  * ferry ${PROJECT_VERSION}, packaged with CPack (scripts/package.sh).\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${ferry_changelog_date}\n")
add_custom_command(OUTPUT ${ferry_changelog}.gz
  COMMAND gzip -9 -n -c ${ferry_changelog} > ${ferry_changelog}.gz
  DEPENDS ${ferry_changelog} VERBATIM)
add_custom_target(ferry_changelog_gz ALL DEPENDS ${ferry_changelog}.gz)
install(FILES ${ferry_changelog}.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES packaging/lintian-overrides RENAME ferry DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides)

# The tarball: everything under ferry-<version>-linux-<arch>/, which may be put anywhere.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/bundle_libraries.cmake)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/cpack_generator_options.cmake)
file(WRITE ${CMAKE_BINARY_DIR}/cpack_generator_options.cmake
  "# Per generator (written by cmake/packaging.cmake).\n"
  "if(CPACK_GENERATOR STREQUAL \"TGZ\")\n"
  "  set(CPACK_PACKAGE_FILE_NAME \"ferry-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}\")\n"
  "  set(CPACK_PACKAGING_INSTALL_PREFIX \"\")\n"
  "endif()\n")
set(CPACK_GENERATOR "DEB;TGZ")
include(CPack)
