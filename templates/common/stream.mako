## Streamed (non-temporal) stores, shared by IR kernels and the contract byte kernels.
##
## Large outputs on a CPU are written with non-temporal vector stores: no read for
## ownership and no eviction of the inputs from the caches, ~1.3x the bytes per second of
## plain stores on the 2-core EPYC PoCL machine (copy 26 -> 35 GB/s; a*b+c 30 -> 35 GB/s).
##
## store_fn(name, vt, et, unaligned, aligned=False) defines ``name(zyx_value, zyx_p)``: store
## the ``vt`` vector at element pointer ``zyx_p`` (of ``et``), non-temporally when it is aligned
## to the vector and the compiler has the builtin, else with the statement ``unaligned``. With
## ``aligned`` the caller promises every pointer is aligned: no test (a test per store cost the
## transposed contiguize ~30%). Also defines, once,
## ZYX_STREAM_FENCE(last): the work item for which ``last`` holds drains the write-combining
## buffers (x86 sfence; a CPU runtime runs a work-group's items in order on one thread), so
## the stores are visible when the kernel ends; empty elsewhere.
<%def name="store_fn(name, vt, et, unaligned, aligned=False)">\
#ifndef ZYX_STREAM_FENCE
#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define ZYX_HAS_NT_STORE 1
#endif
#endif
#if defined(ZYX_HAS_NT_STORE) && (defined(__x86_64__) || defined(__i386__))
#define ZYX_STREAM_FENCE(last) if (last) __builtin_ia32_sfence()
#else
#define ZYX_STREAM_FENCE(last)
#endif
#endif
inline void ${name}(const ${vt} zyx_value, __global ${et} *zyx_p)
{
#ifdef ZYX_HAS_NT_STORE
% if aligned:
    __builtin_nontemporal_store(zyx_value, (__global ${vt} *)zyx_p);
#else
    ${unaligned}
#endif
% else:
    if (((ulong)zyx_p & (sizeof(${vt}) - 1)) == 0) {
        __builtin_nontemporal_store(zyx_value, (__global ${vt} *)zyx_p);
        return;
    }
#endif
    ${unaligned}
% endif
}
</%def>
