# coopmat_add_shaders(<target> OUTPUT_DIR <dir> TARGET_ENVS <env>... SOURCES <file.comp>...)
#
# Compiles each GLSL compute shader with glslangValidator once per target
# environment into <dir>/<name>.<env>.spv at build time. <target> is a custom
# target that other targets depend on. Environments: spirv1.3 spirv1.5 spirv1.6
# (glslang's --target-env names) or vulkan1.x.
function(coopmat_add_shaders target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR" "TARGET_ENVS;SOURCES;DEFINES" ${ARGN})
  set(outputs)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(name ${src} NAME_WE)
    get_filename_component(abs ${src} ABSOLUTE)
    foreach(env IN LISTS ARG_TARGET_ENVS)
      set(out ${ARG_OUTPUT_DIR}/${name}.${env}.spv)
      add_custom_command(
        OUTPUT ${out}
        COMMAND ${GLSLANG_VALIDATOR} -V --quiet --target-env ${env} ${ARG_DEFINES} -o ${out} ${abs}
        DEPENDS ${abs}
        COMMENT "glslang ${name} (${env})"
        VERBATIM)
      list(APPEND outputs ${out})
    endforeach()
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${outputs})
endfunction()

# coopmat_glsl(<output.spv> <source> ENV <glslang env> [VALIDATE <spirv-val env>]
#              [DEFINES NAME[=VALUE]...] [INCLUDES <dir>...] [DEPENDS <file>...])
#
# Adds one compile of a GLSL compute shader to this folder's list, as glslangValidator -V
# --target-env <env> would make it, checked as spirv-val --target-env <VALIDATE env> would.
# coopmat_glsl_batches() then compiles the list in batches with glsl-batch
# (tools/build): one process for many shaders, since most of glslangValidator's time per
# shader is its start.
function(coopmat_glsl out src)
  cmake_parse_arguments(ARG "" "ENV;VALIDATE" "DEFINES;INCLUDES;DEPENDS" ${ARGN})
  get_filename_component(src ${src} ABSOLUTE)
  if(NOT ARG_VALIDATE)
    set(ARG_VALIDATE -)
  endif()
  set(job "${out}\t${ARG_ENV}\t${ARG_VALIDATE}\t${src}")
  foreach(define IN LISTS ARG_DEFINES)
    string(APPEND job "\t-D${define}")
  endforeach()
  foreach(dir IN LISTS ARG_INCLUDES)
    string(APPEND job "\t-I${dir}")
  endforeach()
  get_property(jobs DIRECTORY PROPERTY COOPMAT_GLSL_JOBS)
  if(job IN_LIST jobs)
    return()  # the same variant listed again (from another shape's or type's list)
  endif()
  get_property(outputs DIRECTORY PROPERTY COOPMAT_GLSL_OUTPUTS)
  if(out IN_LIST outputs)
    message(FATAL_ERROR "coopmat_glsl: ${out} is listed twice, with different sources or options")
  endif()
  set_property(DIRECTORY APPEND PROPERTY COOPMAT_GLSL_OUTPUTS "${out}")
  string(REPLACE ";" "|" depends "${src};${ARG_DEPENDS}")
  set_property(DIRECTORY APPEND PROPERTY COOPMAT_GLSL_JOBS "${job}")
  set_property(DIRECTORY APPEND PROPERTY COOPMAT_GLSL_JOB_DEPENDS "${depends}")
endfunction()

# coopmat_glsl_batches(<target> [ALL]): a custom target that builds every shader this
# folder listed with coopmat_glsl, 64 to a build step (a step's list file is rewritten only
# when it changes, so an unchanged batch is not rebuilt).
function(coopmat_glsl_batches target)
  cmake_parse_arguments(ARG "ALL" "" "" ${ARGN})
  get_property(jobs DIRECTORY PROPERTY COOPMAT_GLSL_JOBS)
  get_property(job_depends DIRECTORY PROPERTY COOPMAT_GLSL_JOB_DEPENDS)
  list(LENGTH jobs count)
  set(outputs)
  set(first 0)
  set(batch 0)
  while(first LESS count)
    math(EXPR last "${first} + 63")
    if(last GREATER_EQUAL count)
      math(EXPR last "${count} - 1")
    endif()
    set(text "")
    set(batch_outputs)
    set(batch_depends)
    foreach(i RANGE ${first} ${last})
      list(GET jobs ${i} job)
      list(GET job_depends ${i} depends)
      string(APPEND text "${job}\n")
      string(REGEX MATCH "^[^\t]+" output "${job}")
      list(APPEND batch_outputs ${output})
      string(REPLACE "|" ";" depends "${depends}")
      list(APPEND batch_depends ${depends})
    endforeach()
    list(REMOVE_DUPLICATES batch_depends)
    set(list_file ${CMAKE_CURRENT_BINARY_DIR}/glsl-batch/${target}.${batch}.txt)
    file(CONFIGURE OUTPUT ${list_file} CONTENT "${text}" @ONLY)
    list(LENGTH batch_outputs size)
    add_custom_command(OUTPUT ${batch_outputs}
      COMMAND glsl-batch ${list_file}
      DEPENDS glsl-batch ${list_file} ${batch_depends}
      COMMENT "GLSL ${target} batch ${batch} (${size} shaders)"
      VERBATIM)
    list(APPEND outputs ${batch_outputs})
    math(EXPR first "${last} + 1")
    math(EXPR batch "${batch} + 1")
  endwhile()
  set(all)
  if(ARG_ALL)
    set(all ALL)
  endif()
  add_custom_target(${target} ${all} DEPENDS ${outputs})
endfunction()
