# The libraries as an installable CMake package: `cmake --install BUILD --prefix P` puts them, their
# headers, the kda-oracle command and kda_oracleConfig.cmake into P; another project then does
# find_package(kda_oracle) and links kda::properties, kda::golden, ...
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KDA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kda_oracle)

# Makes kda_<name> a library of the package, in one call from its CMakeLists.txt: the alias kda::<name>
# (the same name in the build tree and once installed), its include/ folder as public headers, and the
# library, with those headers, in the installed export set.
function(kda_install_library target)
  string(REGEX REPLACE "^kda_" "" name ${target})
  add_library(kda::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  # What code compiled elsewhere must share with the installed objects (inside this build every target
  # gets it from kda_configure_target): the -march baseline, since Eigen's alignment of the dynamic
  # matrices in the public headers (allocated on one side, freed on the other) depends on it, and
  # the sanitizers' instrumentation and runtimes.
  if(KDA_CPU_BASELINE)
    target_compile_options(${target} INTERFACE
      $<INSTALL_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:-march=${KDA_CPU_BASELINE}>>)
  endif()
  if(KDA_SANITIZE)
    target_compile_options(${target} INTERFACE
      "$<INSTALL_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:${KDA_SANITIZE_COMPILE_OPTIONS}>>")
    target_link_options(${target} INTERFACE "$<INSTALL_INTERFACE:${KDA_SANITIZE_LINK_OPTIONS}>")
  endif()
  install(TARGETS ${target} EXPORT kda_oracleTargets)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ TYPE INCLUDE)
endfunction()

# The package files, once every library has called kda_install_library (the end of the top-level
# CMakeLists.txt): the exported targets in namespace kda::, the config and its version file.
function(kda_install_package)
  install(EXPORT kda_oracleTargets NAMESPACE kda:: DESTINATION ${KDA_INSTALL_CMAKEDIR})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kda_oracleConfig.cmake.in
    ${PROJECT_BINARY_DIR}/kda_oracleConfig.cmake INSTALL_DESTINATION ${KDA_INSTALL_CMAKEDIR})
  # 0.x: a minor version may break the interface.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/kda_oracleConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/kda_oracleConfig.cmake ${PROJECT_BINARY_DIR}/kda_oracleConfigVersion.cmake
    DESTINATION ${KDA_INSTALL_CMAKEDIR})
endfunction()
