# SPDX-License-Identifier: Apache-2.0
"""fn.transforms.* against matrices written out in numpy (translation, scale and rotation and
shear about a centre, crop boxes, 3D rotation about an axis, composition with an input transform
in both orders, combine), per-sample arguments, their use as warp_affine's matrix, and
fn.coord_transform against M @ x + T."""

import numpy as np
import pytest

import sluice.fn as fn
import sluice.types as types
from sluice import errors, pipeline_def


def run(make, batch=2, srcs=()):
    @pipeline_def(batch_size=batch, num_threads=2, device_id=None)
    def pipe():
        return make(*[fn.external_source(source=lambda s=s: s) for s in srcs])

    out = pipe().run()
    out = out if isinstance(out, (list, tuple)) else [out]
    return [[np.array(o.at(i)) for i in range(batch)] for o in out]


def h(m):
    """(n, n + 1) affine -> homogeneous."""
    n = m.shape[0]
    r = np.eye(n + 1)
    r[:n] = m
    return r


def about(m, c):
    n = len(c)
    t, u = np.eye(n + 1), np.eye(n + 1)
    t[:n, n], u[:n, n] = c, -np.asarray(c)
    return t @ h(m) @ u


def rot2(deg):
    a = np.deg2rad(deg)
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0]])


def close(got, want):
    want = np.asarray(want, np.float64)
    if want.shape[0] == want.shape[1]:
        want = want[:-1]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_basic_transforms():
    outs = run(lambda: (fn.transforms.translation(offset=[3, -2]),
                        fn.transforms.scale(scale=[2, 0.5], center=[10, 20]),
                        fn.transforms.rotation(angle=30, center=[5, 5]),
                        fn.transforms.shear(shear=[0.5, 0.25]),
                        fn.transforms.shear(angles=[10, -20], center=[1, 2]),
                        fn.transforms.crop(from_start=[10, 20], from_end=[30, 60],
                                           to_start=[0, 0], to_end=[1, 1]),
                        fn.transforms.scale(scale=[3], ndim=3),
                        fn.transforms.rotation(angle=90, axis=[0, 0, 2])))
    for i in range(2):
        close(outs[0][i], [[1, 0, 3], [0, 1, -2]])
        close(outs[1][i], about(np.array([[2, 0, 0], [0, 0.5, 0]]), [10, 20]))
        close(outs[2][i], about(rot2(30), [5, 5]))
        close(outs[3][i], [[1, 0.5, 0], [0.25, 1, 0]])
        t = np.tan(np.deg2rad([10, -20]))
        close(outs[4][i], about(np.array([[1, t[0], 0], [t[1], 1, 0]]), [1, 2]))
        close(outs[5][i], [[1 / 20, 0, -10 / 20], [0, 1 / 40, -20 / 40]])
        close(outs[6][i], np.hstack([3 * np.eye(3), np.zeros((3, 1))]))
        close(outs[7][i], [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]])


def test_composition_orders_and_combine():
    outs = run(lambda: (
        fn.transforms.rotation(fn.transforms.translation(offset=[1, 2]), angle=45),
        fn.transforms.rotation(fn.transforms.translation(offset=[1, 2]), angle=45,
                               reverse_order=True),
        fn.transforms.combine(fn.transforms.translation(offset=[1, 2]),
                              fn.transforms.rotation(angle=45),
                              fn.transforms.scale(scale=[2, 3])),
        fn.transforms.combine(fn.transforms.translation(offset=[1, 2]),
                              fn.transforms.rotation(angle=45), reverse_order=True)))
    t = h(np.array([[1, 0, 1], [0, 1, 2]]))
    r = h(rot2(45))
    s = h(np.array([[2, 0, 0], [0, 3, 0]]))
    for i in range(2):
        close(outs[0][i], r @ t)  # translate, then rotate
        close(outs[1][i], t @ r)
        close(outs[2][i], s @ r @ t)  # the first input applied first
        close(outs[3][i], t @ r)


def test_per_sample_arguments():
    angles = [np.array(a, np.float32) for a in (10.0, -70.0)]
    offs = [np.array(o, np.float32) for o in ([1, 2], [-3, 4])]
    a, b = run(lambda ang, off: (fn.transforms.rotation(angle=ang),
                                 fn.transforms.translation(offset=off)), srcs=(angles, offs))
    for i in range(2):
        close(a[i], rot2(float(angles[i])))
        close(b[i], [[1, 0, offs[i][0]], [0, 1, offs[i][1]]])


def test_matrix_feeds_warp_affine():
    img = [np.random.default_rng(1).integers(0, 255, (16, 16, 3)).astype(np.uint8)] * 2
    a, b = run(lambda x: (fn.warp_affine(x, matrix=fn.transforms.rotation(angle=30,
                                                                          center=[8, 8])),
                          fn.warp_affine(x, matrix=[float(v) for v in
                                                    about(rot2(30), [8, 8])[:2].reshape(-1)])),
               srcs=(img,))
    for i in range(2):
        assert np.abs(a[i].astype(int) - b[i].astype(int)).max() <= 1


def test_coord_transform():
    rng = np.random.default_rng(3)
    pts = [rng.uniform(-10, 10, (n, 2)).astype(np.float32) for n in (5, 0)]
    mt = [np.array([[0, 1, 5], [2, 0, -1], [1, 1, 0]], np.float32)] * 2
    a, b, c, d = run(lambda p, m: (fn.coord_transform(p, MT=m),
                                   fn.coord_transform(p, M=[2.0], T=[1.0, 3.0]),
                                   fn.coord_transform(p, M=[1, 2, 3, 4, 5, 6]),
                                   fn.coord_transform(p, MT=fn.transforms.rotation(angle=90),
                                                      dtype=types.FLOAT64)),
                     srcs=(pts, mt))
    for i in range(2):
        x = pts[i].astype(np.float64)
        np.testing.assert_allclose(a[i], x @ mt[i][:, :2].T + mt[i][:, 2], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b[i], 2 * x + [1, 3], rtol=1e-6)
        np.testing.assert_allclose(c[i], x @ np.array([[1, 2], [3, 4], [5, 6]]).T, rtol=1e-5,
                                   atol=1e-5)
        assert c[i].shape == (len(x), 3) and d[i].dtype == np.float64
        np.testing.assert_allclose(d[i], np.stack([-x[:, 1], x[:, 0]], 1), atol=1e-5)


def test_coord_transform_scalar_mt_and_layout():
    # DALI: a scalar MT is that scalar as M with no T; the output keeps the input's layout
    rng = np.random.default_rng(4)
    pts = [rng.uniform(-10, 10, (n, 3)).astype(np.float32) for n in (4, 7)]

    @pipeline_def(batch_size=2, num_threads=2, device_id=None)
    def pipe():
        p = fn.external_source(source=lambda: pts, layout="NX")
        return (fn.coord_transform(p, MT=0.5), fn.coord_transform(p, MT=[0.5]),
                fn.coord_transform(p, M=[1, 0, 0, 0, 1, 0], T=[1, 2]),
                fn.coord_transform(p, MT=fn.random.uniform(range=[2, 3], seed=5)))

    outs = pipe().run()
    for o in outs:
        assert o.layout() == "NX"
    for i in range(2):
        x = pts[i].astype(np.float64)
        for o in outs[:2]:
            np.testing.assert_allclose(np.array(o.at(i)), 0.5 * x, rtol=1e-6)
        np.testing.assert_allclose(np.array(outs[2].at(i)), x[:, :2] + [1, 2], rtol=1e-6)
        got = np.array(outs[3].at(i))  # a per-sample scalar: one factor for the whole sample
        k = got / np.where(x == 0, 1, x)
        assert 2 <= k.min() and k.max() < 3 and np.ptp(k) < 1e-5


def test_warp_dtype():
    # DALI's dtype: interpolation in float, the result rounded and clamped to the output type
    img = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3) * 3
    f = np.linspace(-50, 300, 5 * 4 * 1, dtype=np.float32).reshape(5, 4, 1)
    ident = [1, 0, 0, 0, 1, 0]
    r90, wf, wu, n = run(lambda a, b: (fn.rotate(a, angle=90, dtype=types.FLOAT),
                                       fn.warp_affine(a, matrix=ident, dtype=types.FLOAT),
                                       fn.warp_affine(b, matrix=ident, dtype=types.UINT8),
                                       fn.rotate(a, angle=90)),
                         batch=1, srcs=([img], [f]))
    assert r90[0].dtype == np.float32 and wf[0].dtype == np.float32 and wu[0].dtype == np.uint8
    np.testing.assert_array_equal(r90[0], np.rot90(img).astype(np.float32))
    np.testing.assert_array_equal(r90[0], n[0].astype(np.float32))
    np.testing.assert_array_equal(wf[0], img.astype(np.float32))
    np.testing.assert_array_equal(wu[0], np.clip(np.round(f), 0, 255).astype(np.uint8))


def warp3_reference(vol, m, out, fill):
    """vol (D, H, W, C) through the 3x4 destination-to-source map m, trilinear, voxel centres at
    +0.5, each tap outside the volume fill."""
    D, H, W, C = vol.shape
    z, y, x = np.meshgrid(*[np.arange(n) + 0.5 for n in out], indexing="ij")
    p = np.stack([x, y, z, np.ones_like(x)], -1) @ np.asarray(m, np.float64).reshape(3, 4).T
    f = p - 0.5
    i0 = np.floor(f).astype(np.int64)
    a = f - i0
    res = np.zeros(tuple(out) + (C,))
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                ix, iy, iz = i0[..., 0] + dx, i0[..., 1] + dy, i0[..., 2] + dz
                inside = (ix >= 0) & (ix < W) & (iy >= 0) & (iy < H) & (iz >= 0) & (iz < D)
                v = np.full(tuple(out) + (C,), float(fill))
                v[inside] = vol[iz[inside], iy[inside], ix[inside]]
                w = ((a[..., 0] if dx else 1 - a[..., 0]) * (a[..., 1] if dy else 1 - a[..., 1]) *
                     (a[..., 2] if dz else 1 - a[..., 2]))
                res += w[..., None] * v
    return res


def test_warp_affine_and_rotate_of_volumes():
    # DHWC volumes: warp_affine with a 3x4 map (and size (D, H, W)) against a numpy trilinear
    # reference; rotate about the z axis by 90 degrees is the slices' 2D rotation by -90 (DALI's
    # 3D rotation is positive about its axis; its 2D one counter-clockwise on the screen)
    rng = np.random.default_rng(8)
    vol = (rng.random((6, 7, 9, 2)) * 200).astype(np.float32)
    m = [0.9, 0.1, 0.0, 0.4, -0.2, 1.1, 0.05, -0.3, 0.0, 0.1, 0.8, 0.6]
    w, inv, r3 = run(lambda a: (
        fn.warp_affine(a, matrix=m, size=[5, 8, 10], fill_value=3.0),
        fn.warp_affine(a, matrix=[1, 0, 0, 2, 0, 1, 0, -1, 0, 0, 1, 0.5], inverse_map=False,
                       fill_value=0.0),
        fn.rotate(a, angle=90, axis=[0, 0, 1], fill_value=0.0)),
        batch=1, srcs=([vol],))
    assert w[0].shape == (5, 8, 10, 2)
    np.testing.assert_allclose(w[0], warp3_reference(vol, m, (5, 8, 10), 3.0), atol=1e-3)
    shifted = warp3_reference(vol, [1, 0, 0, -2, 0, 1, 0, 1, 0, 0, 1, -0.5], (6, 7, 9), 0.0)
    np.testing.assert_allclose(inv[0], shifted, atol=1e-3)
    assert r3[0].shape == (6, 9, 7, 2)
    for z in range(6):
        want = run(lambda a: fn.rotate(a, angle=-90, fill_value=0.0), batch=1,
                   srcs=([np.ascontiguousarray(vol[z])],))[0][0]
        np.testing.assert_array_equal(r3[0][z], want)


def test_errors():
    def fails(make, match, srcs=()):
        with pytest.raises(errors.Error, match=match):
            run(make, srcs=srcs)

    fails(lambda: fn.transforms.translation(offset=[1, 2, 3, 4, 5, 6, 7]),
          r"transforms.translation: sample 0: offset has 7 values \(1 to 6 dimensions\)")
    fails(lambda: fn.transforms.rotation(angle=10, center=[1, 2, 3]),
          "transforms.rotation: sample 0: center has 3 values for 2 dimensions")
    fails(lambda: fn.transforms.shear(), "transforms.shear: give shear or angles")
    fails(lambda: fn.transforms.crop(from_start=[1, 1], from_end=[1, 2]),
          "transforms.crop: sample 0: the source box is empty along dimension 0")
    fails(lambda: fn.transforms.combine(fn.transforms.translation(offset=[1, 2]),
                                        fn.transforms.translation(offset=[1, 2, 3])),
          "transforms.combine: sample 0: input 1 is not a 2 x 3 transform")
    fails(lambda p: fn.coord_transform(p, M=[1, 2, 3]),
          "coord_transform: sample 0: M has 3 values", srcs=([np.zeros((4, 2), np.float32)] * 2,))


def test_any_dimension_count_as_dali():
    """DALI's transforms take 1 to 6 dimensions (rotation and shear 2 or 3): translation, scale and
    crop of any count, combine of 6-D matrices; crop with its defaults is a 1-D box."""
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (6, 7)).astype(np.float32)
    b = rng.uniform(-1, 1, (6, 7)).astype(np.float32)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        ta, tb = fn.external_source(source=lambda: ([a], [b]), num_outputs=2)
        return (fn.transforms.combine(ta, tb), fn.transforms.translation(offset=[1.0]),
                fn.transforms.scale(scale=[2.0, 3.0, 4.0, 5.0]), fn.transforms.crop(),
                fn.transforms.crop(from_start=[0.5], from_end=[1.5], to_start=[2.0],
                                   to_end=[4.0]))

    comb, tr, sc, crop0, crop1 = [np.asarray(o.at(0)) for o in p().run()]
    ha, hb = np.eye(7), np.eye(7)
    ha[:6], hb[:6] = a, b
    np.testing.assert_allclose(comb, (hb @ ha)[:6], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(tr, [[1.0, 1.0]])
    np.testing.assert_array_equal(sc, np.hstack([np.diag([2.0, 3.0, 4.0, 5.0]), np.zeros((4, 1))]))
    np.testing.assert_array_equal(crop0, [[1.0, 0.0]])
    np.testing.assert_allclose(crop1, [[2.0, 1.0]])  # x -> 2x + 1 maps [0.5, 1.5] onto [2, 4]
