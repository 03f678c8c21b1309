# Passed to every package's configure as CMAKE_PROJECT_INCLUDE by build.py.
#
# The ROS 2 Jazzy wheels on PyPI install CMake target exports (<pkg>__rosidl_generator_py) whose
# INTERFACE_INCLUDE_DIRECTORIES name the include folders of the machine that built the wheels
# (/opt/python/cp311-cp311/...: Python's headers and NumPy's). CMake refuses an imported target
# that names a folder that does not exist. At the end of the package's top-level CMakeLists.txt,
# after every find_package() has created its imported targets and before CMake checks them, this
# points those entries at this Python's include folder and its NumPy's (ASR_PYTHON_INCLUDE and
# ASR_NUMPY_INCLUDE, set by build.py). The installed files are left as the wheels made them.
if(NOT DEFINED ASR_PYTHON_INCLUDE OR NOT DEFINED ASR_NUMPY_INCLUDE)
  message(FATAL_ERROR "python_include_fix.cmake: ASR_PYTHON_INCLUDE and ASR_NUMPY_INCLUDE unset")
endif()

function(asr_fix_python_includes)
  get_directory_property(_targets IMPORTED_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_fixed "")
    set(_changed FALSE)
    foreach(_d IN LISTS _dirs)
      if(_d MATCHES "^/opt/python/[^/]+/include/python[0-9.]+$")
        set(_d "${ASR_PYTHON_INCLUDE}")
        set(_changed TRUE)
      elseif(_d MATCHES "^/opt/python/[^/]+/lib/python[0-9.]+/site-packages/numpy/.*include$")
        set(_d "${ASR_NUMPY_INCLUDE}")
        set(_changed TRUE)
      endif()
      list(APPEND _fixed "${_d}")
    endforeach()
    if(_changed)
      set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
    endif()
  endforeach()
endfunction()

get_property(_asr_deferred GLOBAL PROPERTY ASR_PYTHON_INCLUDE_FIX_DEFERRED)
if(NOT _asr_deferred)
  set_property(GLOBAL PROPERTY ASR_PYTHON_INCLUDE_FIX_DEFERRED TRUE)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL asr_fix_python_includes)
endif()
