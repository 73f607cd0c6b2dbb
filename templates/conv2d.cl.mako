<%doc>
Direct 2-D convolution for CPUs (zyx.kernels.conv): no im2col buffer, no padded copy.

A work item computes `rows` output rows (one after the other) of `p` output pixels along W by
`v` vectors of `vw` output channels: p * v accumulator vectors held in registers. For each
kernel row kh (skipped when its input row lies in the padding) and each input channel c, it loads
the kw weight vectors of that (kh, c) and the distinct input values its p pixels read, and does
p * kw * v fused multiply-adds, each broadcasting one input value over a weight vector. Tiles
whose input columns are all inside the image run a copy of the loop without column tests; the
border tiles test each column (loop-invariant tests, hoisted).

Layouts: x (N, C, H, W) at element strides (xsN, xsC, xsH, xsW): NCHW or NHWC dense; w (KH, Cg, KW, O) dense (packed by the caller); bias (O,) when
`bias`; out (N, OH, OW, O) dense (channels last: stored as whole vectors). Groups: a work item's
channel block lies inside one group (vw * v divides Og), whose Cg input channels it reduces.
Grid: (O / (vw * v) * ceil(OW / p), ceil(OH / rows), N), work-groups of one.
Parameters: name, t (float/double), vw, p, v, rows, N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw,
dh, dw, groups, bias, xsN, xsC, xsH, xsW.
</%doc>\
<%
    cg = C // groups
    og = O // groups
    blk = vw * v
    nb = O // blk
    vt = t + str(vw)
    span = (p - 1) * sw + (KW - 1) * dw
    # the distinct input column offsets the tile reads, and per (pixel, kw) which one
    cols = sorted({q * sw + k * dw for q in range(p) for k in range(KW)})
%>\
/* zyx ${name}: ${t} conv ${N}x${C}x${H}x${W} (strides ${xsN}, ${xsC}, ${xsH}, ${xsW}) * ${O}x${cg}x${KH}x${KW} -> ${OH}x${OW}, stride (${sh}, ${sw}), padding (${ph}, ${pw}), dilation (${dh}, ${dw}), groups ${groups}; tile ${p} pixels x ${v} x ${vt}, ${rows} row(s) a work item */
% if t == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
__kernel void ${name}(__global ${t} *restrict zyx_out, __global const ${t} *restrict zyx_x,
                      __global const ${t} *restrict zyx_w${", __global const " + t + " *restrict zyx_b" if bias else ""})
{
    const int zyx_t = (int)get_global_id(0);
    const int zyx_ob = zyx_t % ${nb};
    const int zyx_ow0 = (zyx_t / ${nb}) * ${p};
    const int zyx_n = (int)get_global_id(2);
    const int zyx_o0 = zyx_ob * ${blk};
    const int zyx_iw0 = zyx_ow0 * ${sw} - ${pw};
    /* every column this tile reads lies inside the row: the loop without column tests */
    const bool zyx_inner = zyx_iw0 >= 0 && zyx_iw0 + ${span} < ${W};
    __global const ${t} *zyx_xn = zyx_x + (long)zyx_n * ${xsN} + (long)(zyx_o0 / ${og}) * ${cg * xsC} + (long)zyx_iw0 * ${xsW};
    __global const ${t} *zyx_wo = zyx_w + zyx_o0;
    for (int zyx_r = 0; zyx_r < ${rows}; ++zyx_r) {
        const int zyx_oh = (int)get_global_id(1) * ${rows} + zyx_r;
        if (zyx_oh >= ${OH}) break;
% for q in range(p):
%   for j in range(v):
        ${vt} zyx_a${q}_${j} = (${vt})(0);
%   endfor
% endfor
% for kh in range(KH):
        {
            const int zyx_ih = zyx_oh * ${sh} + ${kh * dh - ph};
            if ((uint)zyx_ih < ${H}u) {
                __global const ${t} *zyx_xr = zyx_xn + zyx_ih * ${xsH};
                __global const ${t} *zyx_wk = zyx_wo + ${kh * cg * KW * O};
%   for inner in (True, False):
                ${"if (zyx_inner) {" if inner else "} else {"}
                    for (int zyx_c = 0; zyx_c < ${cg}; ++zyx_c) {
                        __global const ${t} *zyx_xc = zyx_xr + zyx_c * ${xsC};
                        __global const ${t} *zyx_wc = zyx_wk + zyx_c * ${KW * O};
%     for k in range(KW):
%       for j in range(v):
                        const ${vt} zyx_w${k}_${j} = vload${vw}(0, zyx_wc + ${k * O + j * vw});
%       endfor
%     endfor
%     for col in cols:
%       if inner:
                        const ${t} zyx_x${col} = zyx_xc[${col * xsW}];
%       else:
                        const ${t} zyx_x${col} = ((uint)(zyx_iw0 + ${col}) < ${W}u) ? zyx_xc[${col * xsW}] : (${t})(0);
%       endif
%     endfor
%     for q in range(p):
%       for k in range(KW):
%         for j in range(v):
                        zyx_a${q}_${j} = fma((${vt})(zyx_x${q * sw + k * dw}), zyx_w${k}_${j}, zyx_a${q}_${j});
%         endfor
%       endfor
%     endfor
                    }
%   endfor
                }
            }
        }
% endfor
% if bias:
%   for j in range(v):
        const ${vt} zyx_bias${j} = vload${vw}(0, zyx_b + zyx_o0 + ${j * vw});
%   endfor
% endif
        __global ${t} *zyx_o = zyx_out + ((long)(zyx_n * ${OH} + zyx_oh) * ${OW} + zyx_ow0) * ${O} + zyx_o0;
% for q in range(p):
        if (zyx_ow0 + ${q} < ${OW}) {
%   for j in range(v):
            vstore${vw}(zyx_a${q}_${j}${" + zyx_bias%d" % j if bias else ""}, 0, zyx_o + ${q * O + j * vw});
%   endfor
        }
% endfor
    }
}
