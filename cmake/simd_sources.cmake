# oscar_filter_simd_sources(VAR): on x86-64, gives the files in VAR named
# *_avx2.cpp, *_avx512.cpp, *_avx512vnni.cpp, *_avx512vbmi.cpp and *_amx.cpp
# their target flags (each set includes the ones before it; amx adds the
# AMX tile and INT8 instructions and GFNI); elsewhere removes them
# from VAR (their dispatch entry points are compiled out with OSCAR_X86
# undefined). Files named *_neon.cpp and *_neondot.cpp are the AArch64 ones
# (below), removed elsewhere.
set(OSCAR_SIMD_FLAGS_avx2 "-mavx2;-mfma;-mf16c")
set(OSCAR_SIMD_FLAGS_avx512 "${OSCAR_SIMD_FLAGS_avx2};-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq")
set(OSCAR_SIMD_FLAGS_avx512vnni "${OSCAR_SIMD_FLAGS_avx512};-mavx512vnni")
set(OSCAR_SIMD_FLAGS_avx512vbmi "${OSCAR_SIMD_FLAGS_avx512vnni};-mavx512vbmi")
set(OSCAR_SIMD_FLAGS_amx "${OSCAR_SIMD_FLAGS_avx512vbmi};-mamx-tile;-mamx-int8;-mgfni")

function(oscar_filter_simd_sources var)
  set(out)
  foreach(f ${${var}})
    if(f MATCHES "_(avx2|avx512|avx512vnni|avx512vbmi|amx)\\.cpp$")
      if(OSCAR_X86)
        set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "${OSCAR_SIMD_FLAGS_${CMAKE_MATCH_1}}")
        list(APPEND out ${f})
      endif()
    elseif(f MATCHES "_(neon|neondot)\\.cpp$")
      # AArch64: *_neon.cpp need nothing beyond ARMv8.0 (NEON is part of it);
      # *_neondot.cpp use the dot-product (and fp16) instructions of ARMv8.2,
      # and are called only where the CPU's hwcaps show them.
      set(_oscar_neon_kind ${CMAKE_MATCH_1})  # the next MATCHES overwrites CMAKE_MATCH_1
      if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
        if(_oscar_neon_kind STREQUAL "neondot")
          set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+fp16")
        endif()
        list(APPEND out ${f})
      endif()
    else()
      list(APPEND out ${f})
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
endfunction()
