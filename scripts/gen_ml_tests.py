"""The ai.onnx.ml cases of gen_ml_ms_tests.py: skl2onnx exports of fitted scikit-learn models, and
hand-built graphs for the ops skl2onnx does not emit."""

import numpy as np
from onnx import TensorProto, helper
from skl2onnx import to_onnx
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType
from sklearn import ensemble, feature_extraction, linear_model, pipeline, preprocessing, svm, tree
from sklearn.impute import SimpleImputer

ML_OPSET = 3


def _data(rng, n=24, f=4, classes=3):
    x = rng.standard_normal((n, f)).astype(np.float32)
    y = (np.abs(x[:, 0] * 2 + x[:, 1]).astype(np.int64)) % classes
    return x, y


def _export(model, x, ml_opset=ML_OPSET, **options):
    opsets = {"": 17, "ai.onnx.ml": ml_opset}
    try:
        return to_onnx(model, x[:1], target_opset=opsets, options={id(model): options} if options else None)
    except NameError:  # a model without the option (LinearSVC has no ZipMap)
        return to_onnx(model, x[:1], target_opset=opsets)


def _sk(rng):
    """(name, fitted model, input, export options) of the skl2onnx cases."""
    x, y = _data(rng)
    yr = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)
    yb = y % 2
    no_zipmap = {"zipmap": False}
    cases = [
        ("decision_tree_classifier", tree.DecisionTreeClassifier(max_depth=4), y, no_zipmap),
        ("decision_tree_regressor", tree.DecisionTreeRegressor(max_depth=4), yr, {}),
        ("random_forest_classifier", ensemble.RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0), y, no_zipmap),
        ("random_forest_regressor", ensemble.RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0), yr, {}),
        ("gradient_boosting_binary", ensemble.GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0), yb, no_zipmap),
        ("gradient_boosting_multiclass", ensemble.GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0), y, no_zipmap),
        ("gradient_boosting_regressor", ensemble.GradientBoostingRegressor(n_estimators=4, max_depth=2, random_state=0), yr, {}),
        ("logistic_regression_binary", linear_model.LogisticRegression(), yb, no_zipmap),
        ("logistic_regression_multiclass", linear_model.LogisticRegression(), y, no_zipmap),
        ("linear_regression", linear_model.LinearRegression(), yr, {}),
        ("ridge_classifier", linear_model.RidgeClassifier(), y, no_zipmap),
        ("linear_svc", svm.LinearSVC(), y, no_zipmap),
        ("svc_rbf", svm.SVC(kernel="rbf"), y, no_zipmap),
        ("svc_linear_binary", svm.SVC(kernel="linear"), yb, no_zipmap),
        ("svc_poly_proba", svm.SVC(kernel="poly", degree=2, probability=True, random_state=0), y, no_zipmap),
        ("svr_rbf", svm.SVR(kernel="rbf"), yr, {}),
        ("svr_sigmoid", svm.SVR(kernel="sigmoid"), yr, {}),
        ("standard_scaler", preprocessing.StandardScaler(), None, {}),
        ("minmax_scaler", preprocessing.MinMaxScaler(), None, {}),
        ("normalizer_l1", preprocessing.Normalizer(norm="l1"), None, {}),
        ("normalizer_l2", preprocessing.Normalizer(norm="l2"), None, {}),
        ("normalizer_max", preprocessing.Normalizer(norm="max"), None, {}),
        ("binarizer", preprocessing.Binarizer(threshold=0.2), None, {}),
    ]
    for name, model, target, options in cases:
        model.fit(x, target) if target is not None else model.fit(x)
        yield name, _export(model, x, **options), {"X": x}
    # The newer TreeEnsemble op (ai.onnx.ml 5) for the same kinds of models.
    for name, model, target, options in cases[:4]:
        model.fit(x, target)
        yield name + "_ml5", _export(model, x, ml_opset=5, **options), {"X": x}
    # Imputer: NaN holes filled by the column means.
    xn = x.copy()
    xn[::3, 1] = np.nan
    imp = SimpleImputer(strategy="mean").fit(xn)
    yield "simple_imputer", _export(imp, xn), {"X": xn}
    # OneHotEncoder over integer categories (as floats, what skl2onnx feeds it).
    xc = rng.integers(0, 4, size=(12, 2)).astype(np.int64)
    enc = preprocessing.OneHotEncoder(sparse_output=False).fit(xc)
    yield "one_hot_encoder", _export(enc, xc), {"X": xc}
    # Classifiers as skl2onnx exports them by default: probabilities through ZipMap, one
    # label -> probability map per row (int64 and string class labels).
    lr = linear_model.LogisticRegression().fit(x, y)
    yield "logistic_regression_zipmap", _export(lr, x), {"X": x}
    names = np.array(["ant", "bee", "cow"])[y]
    rf = ensemble.RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(x, names)
    yield "random_forest_zipmap_string_labels", _export(rf, x), {"X": x}
    # sklearn's DictVectorizer (ai.onnx.ml DictVectorizer over a map(string, float) input) and
    # a pipeline of it into a classifier with ZipMap.
    rows = [{"age": 3.0, "legs": 4.0}, {"legs": 2.0, "wings": 2.0}, {"age": 1.5, "wings": 2.0},
            {"age": 7.0, "legs": 4.0, "tail": 1.0}]
    dv = feature_extraction.DictVectorizer(sparse=False).fit(rows)
    dict_type = [("X", DictionaryType(StringTensorType([]), FloatTensorType([])))]
    opsets = {"": 17, "ai.onnx.ml": ML_OPSET}
    yield "dict_vectorizer", convert_sklearn(dv, initial_types=dict_type, target_opset=opsets), {"X": rows[3]}
    pipe = pipeline.make_pipeline(feature_extraction.DictVectorizer(sparse=False),
                                  linear_model.LogisticRegression()).fit(rows, [0, 1, 1, 0])
    yield "dict_vectorizer_pipeline_zipmap", convert_sklearn(pipe, initial_types=dict_type, target_opset=opsets), {"X": rows[1]}
    # sklearn's LabelEncoder: strings to int64 (ai.onnx.ml LabelEncoder).
    words = np.array(["cat", "dog", "bird", "dog", "fish", "cat"])
    le = preprocessing.LabelEncoder().fit(words)
    m = to_onnx(le, words[:1], target_opset={"": 17, "ai.onnx.ml": 2})
    yield "label_encoder_strings", m, {m.graph.input[0].name: words}


def _model(nodes, inputs, outputs, ml_opset=ML_OPSET, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", ml_opset)],
        ir_version=9,
    )


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _hand(rng):
    """Graphs of single ai.onnx.ml ops skl2onnx does not emit on their own."""
    F, I, S = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING
    ml = "ai.onnx.ml"
    x = rng.standard_normal((5, 4)).astype(np.float32)

    n = helper.make_node("CategoryMapper", ["X"], ["Y"], domain=ml,
                         cats_strings=["a", "b", "c"], cats_int64s=[7, 8, 9], default_int64=-5)
    xs = np.array([["a", "c"], ["z", "b"]])
    yield "category_mapper_to_int", _model([n], [_vi("X", S, [2, 2])], [_vi("Y", I, [2, 2])]), {"X": xs}
    n = helper.make_node("CategoryMapper", ["X"], ["Y"], domain=ml,
                         cats_strings=["a", "b", "c"], cats_int64s=[7, 8, 9], default_string="none")
    xi = np.array([7, 9, 3, 8], np.int64)
    yield "category_mapper_to_string", _model([n], [_vi("X", I, [4])], [_vi("Y", S, [4])]), {"X": xi}

    n = helper.make_node("FeatureVectorizer", ["A", "B"], ["Y"], domain=ml, inputdimensions=[2, 3])
    a = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal((3, 3)).astype(np.float32)
    yield "feature_vectorizer", _model([n], [_vi("A", F, [3, 2]), _vi("B", F, [3, 3])], [_vi("Y", F, [3, 5])]), {"A": a, "B": b}

    n = helper.make_node("ArrayFeatureExtractor", ["X", "I"], ["Y"], domain=ml)
    idx = np.array([3, 0], np.int64)
    yield "array_feature_extractor", _model([n], [_vi("X", F, [5, 4]), _vi("I", I, [2])], [_vi("Y", F, [5, 2])]), {"X": x, "I": idx}

    n = helper.make_node("Imputer", ["X"], ["Y"], domain=ml,
                         imputed_value_floats=[9.0], replaced_value_float=0.0)
    xz = x.copy()
    xz[1, 2] = 0.0
    yield "imputer_replaced_value", _model([n], [_vi("X", F, [5, 4])], [_vi("Y", F, [5, 4])]), {"X": xz}

    n = helper.make_node("Scaler", ["X"], ["Y"], domain=ml, offset=[0.5, 0.0, 1.0, -2.0], scale=[2.0, 1.0, -1.0, 3.0])
    xi = rng.integers(-5, 5, size=(3, 4)).astype(np.int64)
    yield "scaler_int64", _model([n], [_vi("X", I, [3, 4])], [_vi("Y", F, [3, 4])]), {"X": xi}

    n = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ml, cats_strings=["r", "g", "b"], zeros=1)
    xs = np.array([["g", "r"], ["b", "q"]])
    yield "one_hot_encoder_strings", _model([n], [_vi("X", S, [2, 2])], [_vi("Y", F, [2, 2, 3])]), {"X": xs}

    n = helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ml,
                         keys_int64s=[1, 2, 3], values_floats=[0.5, 1.5, 2.5], default_float=-1.0)
    xi = np.array([3, 1, 7], np.int64)
    yield "label_encoder_int_to_float", _model([n], [_vi("X", I, [3])], [_vi("Y", F, [3])], ml_opset=2), {"X": xi}

    n = helper.make_node("LinearClassifier", ["X"], ["L", "S"], domain=ml,
                         coefficients=list(rng.standard_normal(8).astype(float)), intercepts=[0.1, -0.2],
                         classlabels_strings=["no", "yes"], post_transform="SOFTMAX")
    yield "linear_classifier_string_labels", _model([n], [_vi("X", F, [5, 4])], [_vi("L", S, [5]), _vi("S", F, [5, 2])]), {"X": x}
    n = helper.make_node("LinearClassifier", ["X"], ["L", "S"], domain=ml,
                         coefficients=list(rng.standard_normal(4).astype(float)), intercepts=[0.3],
                         classlabels_ints=[0, 1], post_transform="LOGISTIC")
    yield "linear_classifier_one_class", _model([n], [_vi("X", F, [5, 4])], [_vi("L", I, [5]), _vi("S", F, [5, 2])]), {"X": x}
    n = helper.make_node("LinearRegressor", ["X"], ["Y"], domain=ml,
                         coefficients=list(rng.standard_normal(8).astype(float)), intercepts=[1.0, 2.0], targets=2)
    yield "linear_regressor_two_targets", _model([n], [_vi("X", F, [5, 4])], [_vi("Y", F, [5, 2])]), {"X": x}
    # The older TreeEnsembleRegressor 1 with an explicit SUM over two one-split trees.
    n = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain=ml, n_targets=1,
                         nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 0, 1, 2],
                         nodes_featureids=[0, 0, 0, 2, 0, 0], nodes_values=[0.1, 0, 0, -0.3, 0, 0],
                         nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "LEAF"],
                         nodes_truenodeids=[1, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 0, 0, 2, 0, 0],
                         target_treeids=[0, 0, 1, 1], target_nodeids=[1, 2, 1, 2], target_ids=[0, 0, 0, 0],
                         target_weights=[1.0, 2.0, 10.0, 20.0], base_values=[0.5], aggregate_function="AVERAGE")
    yield "tree_ensemble_regressor_average", _model([n], [_vi("X", F, [5, 4])], [_vi("Y", F, [5, 1])], ml_opset=1), {"X": x}


def _maps(rng):
    """ZipMap, DictVectorizer and CastMap as single ops: the map forms skl2onnx does not emit."""
    F, I, S = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING
    ml = "ai.onnx.ml"

    def map_t(k, v):
        return helper.make_map_type_proto(k, helper.make_tensor_type_proto(v, None))

    def seq_map_t(k, v):
        return helper.make_sequence_type_proto(map_t(k, v))

    def vi(name, tp):
        return helper.make_value_info(name, tp)

    x = rng.random((4, 3)).astype(np.float32)
    n = helper.make_node("ZipMap", ["X"], ["Z"], domain=ml, classlabels_int64s=[4, 2, 9])
    yield "zip_map_int64_labels", _model([n], [_vi("X", F, [4, 3])], [vi("Z", seq_map_t(I, F))]), {"X": x}
    n = helper.make_node("ZipMap", ["X"], ["Z"], domain=ml, classlabels_strings=["a", "b", "c"])
    yield "zip_map_string_labels_1d", _model([n], [_vi("X", F, [3])], [vi("Z", seq_map_t(S, F))]), {"X": x[0]}
    n = helper.make_node("DictVectorizer", ["X"], ["Y"], domain=ml, int64_vocabulary=[5, 1, 3, 8])
    yield "dict_vectorizer_int64_keys", _model([n], [vi("X", map_t(I, F))], [_vi("Y", F, [1, 4])]), {"X": {1: 2.0, 3: 4.0, 9: 9.0}}
    feed = {3: 1.5, 0: -2.25, 1: 7.0}
    for to, dt in (("TO_FLOAT", F), ("TO_STRING", S), ("TO_INT64", I)):
        for form in ("DENSE", "SPARSE"):
            n = helper.make_node("CastMap", ["X"], ["Y"], domain=ml, cast_to=to, map_form=form, max_map=5)
            width = 5 if form == "SPARSE" else 3
            yield (f"cast_map_{to[3:].lower()}_{form.lower()}",
                   _model([n], [vi("X", map_t(I, F))], [_vi("Y", dt, [1, width])]), {"X": feed})


def ml_tests(rng):
    yield from _sk(rng)
    yield from _hand(rng)
    yield from _maps(rng)
