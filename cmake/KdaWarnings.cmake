# Project-wide compile settings, applied per target through kda_configure_target().

# KDA_SANITIZE's flags; the installed libraries pass them on to their users too (KdaInstall.cmake).
set(KDA_SANITIZE_COMPILE_OPTIONS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
set(KDA_SANITIZE_LINK_OPTIONS -fsanitize=address,undefined)

function(kda_configure_target target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
  # Arithmetic exactly as written: no a * b + c fused into an FMA behind the code's back. GCC fuses
  # by default (-ffp-contract=fast) but only when it optimises, so a Debug (-O0) and a Release (-O3)
  # build of the reference differed in the last bits; explicit fused operations (std::fma, Eigen's
  # pmadd) still fuse. The golden files are byte-identical across optimisation levels (test-all.sh).
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
  if(KDA_CPU_BASELINE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=${KDA_CPU_BASELINE}>)
  endif()
  if(KDA_SANITIZE)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${KDA_SANITIZE_COMPILE_OPTIONS}>")
    target_link_options(${target} PRIVATE ${KDA_SANITIZE_LINK_OPTIONS})
  endif()
  if(KDA_BUILD_FUZZERS)  # fuzz/: libFuzzer's coverage, AddressSanitizer and UBSan in every target
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined
                                              -fno-sanitize-recover=all -fno-omit-frame-pointer>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
