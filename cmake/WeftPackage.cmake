# The installable weft (issue 19): one shared library (libweft.so) and one static archive
# (libweft_static.a) holding every module, so a consumer links one thing and never sees LLVM's
# headers or weft's src/; the `weft` program; include/weft; the workloads and examples under
# share/weft; a CMake package (weft::weft, weft::weft_static) and a pkg-config file.
#
# The module libraries (weft_<module>) are compiled once, as position-independent code, and
# serve both the tools and tests (linked statically) and libweft.so (their archives linked
# whole). -fno-semantic-interposition keeps PIC's cost off calls inside the library. (An earlier
# build compiled every module a second time as PIC objects for the shared library: 465 s of a
# single core in CI, for code identical but for the relocation model.)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The ONNX importer's imported targets are local to src/frontend/onnx; the library needs them.
find_package(Protobuf REQUIRED)
find_package(ONNX CONFIG REQUIRED)

set(weft_package_modules weft_ir weft_frontend weft_passes weft_autodiff weft_fusion weft_codegen
                         weft_sim weft_cuda weft_runtime weft_onnx)
set(weft_package_archives)
set(weft_package_targets)
set(weft_package_deps) # what the modules link that is not weft: LLVM, fmt, spdlog, protobuf...
foreach(module IN LISTS weft_package_modules)
  if(NOT TARGET ${module})
    continue()
  endif()
  set_target_properties(${module} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${module} PRIVATE -fno-semantic-interposition)
  get_target_property(libs ${module} LINK_LIBRARIES)
  if(libs)
    foreach(lib IN LISTS libs)
      if(NOT lib MATCHES "^weft_")
        list(APPEND weft_package_deps ${lib})
      endif()
    endforeach()
  endif()
  list(APPEND weft_package_archives $<TARGET_FILE:${module}>)
  list(APPEND weft_package_targets ${module})
endforeach()
list(REMOVE_DUPLICATES weft_package_deps)

# --- libweft.so: every module archive linked whole, the public API exported; LLVM and the rest
# linked as shared libs. The archives go in by path (not as targets) so that CMake does not also
# link them a second time through the modules' own dependencies.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/src/weft_shared_anchor.cc
     "// libweft.so's code is its module archives, linked whole (cmake/WeftPackage.cmake).\n")
add_library(weft_shared SHARED ${CMAKE_CURRENT_BINARY_DIR}/src/weft_shared_anchor.cc)
add_dependencies(weft_shared ${weft_package_targets})
set_target_properties(weft_shared PROPERTIES OUTPUT_NAME weft EXPORT_NAME weft VERSION ${PROJECT_VERSION}
                                             SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                                             LINK_DEPENDS "${weft_package_archives}")
target_link_libraries(weft_shared PRIVATE -Wl,--whole-archive ${weft_package_archives}
                      -Wl,--no-whole-archive ${weft_package_deps} Threads::Threads ${CMAKE_DL_LIBS})
target_include_directories(weft_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(weft_shared INTERFACE cxx_std_20)
# A dangling reference would only show up in the consumer's link: catch it here.
target_link_options(weft_shared PRIVATE -Wl,--no-undefined)

# --- libweft_static.a: the module archives merged (ar's MRI script), for fully static embeds.
set(weft_static_archive ${CMAKE_CURRENT_BINARY_DIR}/src/libweft_static.a)
set(mri "create ${weft_static_archive}\n")
set(weft_static_inputs)
foreach(module IN LISTS weft_package_modules)
  if(TARGET ${module})
    string(APPEND mri "addlib $<TARGET_FILE:${module}>\n")
    list(APPEND weft_static_inputs ${module})
  endif()
endforeach()
string(APPEND mri "save\nend\n")
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/src/weft_static.mri CONTENT "${mri}")
add_custom_command(
  OUTPUT ${weft_static_archive}
  COMMAND ${CMAKE_COMMAND} -E rm -f ${weft_static_archive}
  COMMAND ${CMAKE_AR} -M < ${CMAKE_CURRENT_BINARY_DIR}/src/weft_static.mri # the shell redirects
  DEPENDS ${weft_static_inputs} ${CMAKE_CURRENT_BINARY_DIR}/src/weft_static.mri
  COMMENT "Merging weft's module archives into libweft_static.a")
add_custom_target(weft_static ALL DEPENDS ${weft_static_archive})

# What a static consumer must link besides the archive: the shared libraries the modules use,
# by absolute path (the consumer need not find LLVM or protobuf's CMake packages).
set(weft_static_link_paths)
foreach(dep IN LISTS weft_package_deps)
  if(TARGET ${dep})
    get_target_property(type ${dep} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY") # header-only (nlohmann_json, CLI11)
      continue()
    endif()
    list(APPEND weft_static_link_paths "$<TARGET_LINKER_FILE:${dep}>")
  elseif(dep MATCHES "^/|^-")
    list(APPEND weft_static_link_paths "${dep}")
  endif()
endforeach()

# --- install ---
install(TARGETS weft RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS weft_shared EXPORT weftTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${weft_static_archive} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(DIRECTORY bench/workloads/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/workloads
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY examples/graphs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/examples/graphs)
install(FILES examples/embed.cc DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/examples)

set(weft_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${weft_cmake_dir})
# weft::weft_static, declared by the config (an archive built by a custom command has no
# CMake target to export); its dependencies are written at generate time.
string(REPLACE ";" "\n  " weft_static_deps_text "${weft_static_link_paths}")
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/weftStaticDeps.cmake
     CONTENT "set(_weft_static_deps\n  ${weft_static_deps_text})\n")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/weftStaticDeps.cmake DESTINATION ${weft_cmake_dir})
configure_package_config_file(cmake/weftConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/weftConfig.cmake
                              INSTALL_DESTINATION ${weft_cmake_dir}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_DATADIR)
# 0.x releases are compatible within a minor version (the API is not frozen before 1.0).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/weftConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/weftConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/weftConfigVersion.cmake DESTINATION ${weft_cmake_dir})

# pkg-config: `pkg-config --cflags --libs weft` links libweft.so; weft-static links the archive
# and, by absolute path, the shared libraries it needs.
file(RELATIVE_PATH weft_pc_to_prefix /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
set(weft_pc_suffix "")
set(weft_pc_kind "shared library")
set(weft_pc_libs "-lweft")
configure_file(cmake/weft.pc.in ${CMAKE_CURRENT_BINARY_DIR}/weft.pc @ONLY)
set(weft_pc_suffix "-static")
set(weft_pc_kind "static archive")
set(weft_pc_libs "-lweft_static")
foreach(p IN LISTS weft_static_link_paths)
  string(APPEND weft_pc_libs " ${p}")
endforeach()
string(APPEND weft_pc_libs " -pthread -ldl")
configure_file(cmake/weft.pc.in ${CMAKE_CURRENT_BINARY_DIR}/weft-static.pc.in @ONLY)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/weft-static.pc
     INPUT ${CMAKE_CURRENT_BINARY_DIR}/weft-static.pc.in)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/weft.pc ${CMAKE_CURRENT_BINARY_DIR}/weft-static.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
