# Run after ferry is linked (helper/cli/CMakeLists.txt): writes what `ferry completion SHELL` and
# `ferry man-page` print into the build tree's share/, where each shell and man look in an install.
# cmake -DFERRY=path/to/ferry -DSHARE=build/share -P write_shell_completions.cmake
cmake_minimum_required(VERSION 3.21)  # file(COPY_FILE), and lists that keep empty elements
foreach(item "completion;bash;bash-completion/completions/ferry"
             "completion;zsh;zsh/site-functions/_ferry"
             "completion;fish;fish/vendor_completions.d/ferry.fish"
             "man-page;;man/man1/ferry.1")
  list(GET item 0 command)
  list(GET item 1 shell)
  list(GET item 2 file)
  get_filename_component(dir ${SHARE}/${file} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  execute_process(COMMAND ${FERRY} ${command} ${shell} OUTPUT_FILE ${SHARE}/${file}.new
                  RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    file(REMOVE ${SHARE}/${file}.new)
    message(FATAL_ERROR "ferry ${command} ${shell} failed (${status}): ${error}")
  endif()
  # Rewritten only when changed, so the files' times say when the commands last changed.
  file(COPY_FILE ${SHARE}/${file}.new ${SHARE}/${file} ONLY_IF_DIFFERENT)
  file(REMOVE ${SHARE}/${file}.new)
endforeach()
