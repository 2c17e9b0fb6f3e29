# One static library per folder of common/ (and of tools/, the test tools), linking only the
# folders it may use: the layers' declared graph. These targets are its one source:
# rocket_rides_write_layers() reads their link libraries back into a file that
# scripts/check_layers.py holds every #include "common/..." and "tools/..." against.

# rocket_rides_folder(NAME [USES FOLDER...] [EXTERNAL TARGET...] [SOURCES FILE...])
# rr_NAME from NAME/*.cpp beside the calling CMakeLists.txt (common/NAME/, tools/NAME/; an interface
# library for a folder of headers only), linking rr_FOLDER for each folder it USES and the EXTERNAL
# libraries its own files call. A tool's main.cpp is its executable's, not the library's.
# The test build makes the folders shared libraries: every test executable would otherwise carry its
# own copy of the sanitized library and its debug information (about 100 MB each, 6.7 GB for the
# suites, a disk a fresh machine may not have, and as many long links). Releases and the package
# stay static: one self-contained file per daemon.
if(ROCKET_RIDES_SHARED_FOLDERS)
  set(ROCKET_RIDES_FOLDER_LIBRARY_TYPE SHARED)
else()
  set(ROCKET_RIDES_FOLDER_LIBRARY_TYPE STATIC)
endif()

function(rocket_rides_folder name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "USES;EXTERNAL;SOURCES")
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/main\\.cpp$")
  list(APPEND sources ${ARG_SOURCES})
  set(uses)
  foreach(folder IN LISTS ARG_USES)
    list(APPEND uses rr_${folder})
  endforeach()
  if(sources)
    add_library(rr_${name} ${ROCKET_RIDES_FOLDER_LIBRARY_TYPE} ${sources})
    set(scope PUBLIC)
  else()
    add_library(rr_${name} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(rr_${name} ${scope} ${PROJECT_SOURCE_DIR})
  target_compile_definitions(rr_${name} ${scope} BOOST_ASIO_NO_DEPRECATED)
  target_link_libraries(rr_${name} ${scope} ${uses} ${ARG_EXTERNAL})
  # Every build checks the layers before it compiles a folder.
  add_dependencies(rr_${name} check_layers)
  file(RELATIVE_PATH parent ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  rocket_rides_layered(${parent}/${name} rr_${name})
endfunction()

# rocket_rides_layered(FOLDER TARGET): FOLDER's files may include what TARGET links (a main's
# folder and its executable, a folder of common/ and its library).
function(rocket_rides_layered folder target)
  set_property(GLOBAL APPEND PROPERTY ROCKET_RIDES_LAYERED "${folder}=${target}")
endfunction()

# Writes the declared graph, {"folder": ["folder it links", ...], ...}, from the targets' link
# libraries (after every target is declared: the end of the top-level CMakeLists.txt).
function(rocket_rides_write_layers file)
  get_property(entries GLOBAL PROPERTY ROCKET_RIDES_LAYERED)
  foreach(entry IN LISTS entries)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 folder)
    list(GET pair 1 target)
    set(folder_of_${target} ${folder})
  endforeach()
  set(json "{\n")
  set(separator "")
  foreach(entry IN LISTS entries)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 folder)
    list(GET pair 1 target)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    else()
      get_target_property(links ${target} LINK_LIBRARIES)
    endif()
    set(uses "")
    set(comma "")
    foreach(link IN LISTS links)
      if(DEFINED folder_of_${link})
        string(APPEND uses "${comma}\"${folder_of_${link}}\"")
        set(comma ", ")
      endif()
    endforeach()
    string(APPEND json "${separator}  \"${folder}\": [${uses}]")
    set(separator ",\n")
  endforeach()
  string(APPEND json "\n}\n")
  file(CONFIGURE OUTPUT ${file} CONTENT "${json}" @ONLY)
endfunction()
