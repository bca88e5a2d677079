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
