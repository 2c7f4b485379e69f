"""Tests of course_lib.data (splits, loading, download) and course_lib.grammar (the generated corpus)."""
from __future__ import annotations

import hashlib
import http.server
import re
import socket
import threading

import pytest

from course_lib import data, grammar
from course_lib.grammar import make_clause, make_np, make_sentence, realise, realise_np

N = 3000  # corpus sample for the statistical tests (fast)


# ---------------------------------------------------------------- splits and determinism
def test_deterministic_and_seeded():
    a = data._generate("valid", 0, 300, False)[0]
    assert a == data._generate("valid", 0, 300, False)[0]
    assert a != data._generate("valid", 1, 300, False)[0]


def test_prefix_property():
    small = data.translation_pairs("test", n=200)
    assert small == data.translation_pairs("test", n=1000)[:200]


def test_unknown_split_and_bad_n():
    with pytest.raises(ValueError, match="train, valid, test, test_long"):
        data.translation_pairs("dev")
    with pytest.raises(ValueError, match="at most"):
        data.translation_pairs("valid", n=10**9)


def test_default_sizes():
    assert data.split_sizes() == {"train": 200_000, "valid": 2_000, "test": 2_000, "test_long": 1_000}
    assert len(data.translation_pairs("test")) == 2_000


def test_splits_disjoint_unique_and_hashed():
    splits = {s: data.translation_pairs(s, n=N if s == "train" else 1000) for s in data.SPLITS}
    sources = {s: [e for e, _ in p] for s, p in splits.items()}
    for s, src in sources.items():
        assert len(set(src)) == len(src), f"duplicate sources in {s}"
    for s in ("train", "valid", "test"):
        assert all(data.split_of(e) == s for e in sources[s])  # disjoint by construction
    names = list(sources)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not set(sources[a]) & set(sources[b]), (a, b)


def test_lengths_and_buckets():
    train = [len(e.split()) for e, _ in data.translation_pairs("train", n=N)]
    test = [len(e.split()) for e, _ in data.translation_pairs("test")]
    long = [len(e.split()) for e, _ in data.translation_pairs("test_long", n=300)]
    assert max(train) <= data.MAX_TRAIN_TOKENS and max(test) <= data.MAX_TRAIN_TOKENS
    assert min(long) > data.MAX_TRAIN_TOKENS and max(long) <= data.LONG_TOKENS[1]
    for lengths in (train, test):
        buckets = [sum(lo <= n <= hi for n in lengths) / len(lengths)
                   for lo, hi in ((1, 10), (11, 20), (21, 30), (31, 99))]
        assert min(buckets) > 0.12, buckets
    assert min(train) <= 4


def test_format():
    for en, fr in data.translation_pairs("test", n=500):
        for s in (en, fr):
            assert s == s.lower() and s.endswith(" .") and "  " not in s and s == s.strip()


def test_full_train_split_has_200k_unique_pairs_and_is_cached():
    # How fast it is generated is measured by benchmarks/corpus_speed.py, not asserted here.
    data._CACHE.pop(("train", 0, False), None)
    pairs = data.translation_pairs("train")
    assert len(pairs) == 200_000 and len({e for e, _ in pairs}) == 200_000
    assert ("train", 0, False) in data._CACHE
    assert data.translation_pairs("train", n=1000) == pairs[:1000]


# ---------------------------------------------------------------- references
def test_reference_sets():
    pairs = data.translation_pairs("test", n=600)
    refs = data.reference_sets("test", n=600)
    assert len(refs) == len(pairs)
    assert all(r[0] == fr for r, (_, fr) in zip(refs, pairs))
    assert all(len(set(r)) == len(r) for r in refs)
    assert sum(len(r) >= 2 for r in refs) / len(refs) > 0.4


def test_synonym_keeps_agreement():
    np = make_np("bicycle", adjectives=("small", "red"))
    assert realise(np) == ("the small red bicycle", "le petit vélo rouge")
    assert realise(np, variant=1)[1] == "la petite bicyclette rouge"
    c = make_clause(make_np("teacher"), "be", adjective="happy")
    assert realise(c, variant=1)[1] == "l'enseignant est content"


# ---------------------------------------------------------------- phenomena, one each
def test_agreement_feminine_plural_adjective():
    assert realise_np(noun="table", adjective="petit", determiner="def", number="pl") == (
        "the small tables", "les petites tables")
    assert realise_np("cow", "white", "indef", "pl") == ("some white cows", "des vaches blanches")
    assert realise(make_clause("they", "eat")) == ("they eat", "ils mangent")
    assert realise(make_clause("we", "eat")) == ("we eat", "nous mangeons")


def test_elision():
    assert realise_np("man")[1] == "l'homme"
    assert realise_np("tree", determiner="dem")[1] == "cet arbre"
    assert realise_np("school", determiner="my")[1] == "mon école"
    assert realise_np("tree", "small")[1] == "le petit arbre"  # no elision before a consonant
    assert realise(make_clause("i", "like", make_np("apple", "indef"))) == (
        "i like an apple", "j'aime une pomme")


def test_contractions():
    give = make_clause(make_np("girl"), "give", make_np("cake"), to=make_np("dog"))
    assert realise(give) == ("the girl gives the cake to the dog", "la fille donne le gâteau au chien")
    talk = make_clause(make_np("woman"), "talk", to=make_np("child", number="pl"))
    assert realise(talk)[1] == "la femme parle aux enfants"
    near = make_np("house", pp=("near", make_np("park")))
    assert realise(near) == ("the house near the park", "la maison près du parc")
    of = make_np("dog", pp=("of", make_np("neighbor", number="pl")))
    assert realise(of)[1] == "le chien des voisins"
    elided = make_np("dog", pp=("of", make_np("man")))
    assert realise(elided)[1] == "le chien de l'homme"
    indef = make_np("cat", pp=("near", make_np("tree", "indef", "pl")))
    assert realise(indef) == ("the cat near some trees", "le chat près d'arbres")


def test_adjective_order():
    assert realise_np("cat", "black") == ("the black cat", "le chat noir")
    assert realise_np("cat", "small") == ("the small cat", "le petit chat")
    assert realise_np("car", adjectives=("big", "red"), number="pl") == (
        "the big red cars", "les grandes voitures rouges")


def test_negation():
    assert realise(make_clause("dog", "eat", make_np("cake"), negated=True)) == (
        "the dog does not eat the cake", "le chien ne mange pas le gâteau")
    assert realise(make_clause("he", "like", make_np("cat", number="pl"), negated=True)) == (
        "he does not like the cats", "il n'aime pas les chats")
    assert realise(make_clause(make_np("horse", number="pl"), "be", adjective="tired", negated=True)) == (
        "the horses are not tired", "les chevaux ne sont pas fatigués")
    # the indefinite object of a negated verb becomes "de"
    assert realise(make_clause("she", "eat", make_np("orange", "indef"), negated=True))[1] == (
        "elle ne mange pas d'orange")


def test_relative_clauses():
    qui = make_np("dog", rel=make_clause(None, "eat", make_np("cake")))
    assert realise(qui) == ("the dog that eats the cake", "le chien qui mange le gâteau")
    que = make_np("cake", rel=make_clause(make_np("dog"), "eat"))
    assert realise(que) == ("the cake that the dog eats", "le gâteau que le chien mange")
    qu = make_np("letter", number="pl", rel=make_clause("he", "read"))
    assert realise(qu) == ("the letters that he reads", "les lettres qu'il lit")
    agree = make_np("woman", number="pl", rel=make_clause(None, "be", adjective="tired"))
    assert realise(agree) == ("the women who are tired", "les femmes qui sont fatiguées")


def test_coordination():
    s = make_sentence(make_clause("boy", "sleep"), make_clause("girl", "sing"))
    assert realise(s) == ("the boy sleeps and the girl sings .", "le garçon dort et la fille chante .")
    both = make_np("girl", coord=make_np("cow", "indef"))
    assert realise(make_clause(both, "be", adjective="tired")) == (
        "the girl and a cow are tired", "la fille et une vache sont fatiguées")
    mixed = make_np("girl", coord=make_np("dog"))
    assert realise(make_clause(mixed, "be", adjective="tired"))[1] == "la fille et le chien sont fatigués"


def test_nesting_relative_inside_pp():
    inner = make_np("table", pp=("in", make_np("kitchen", rel=make_clause(make_np("mother"), "visit"))))
    c = make_clause("cat", "sleep", pp=("under", inner))
    assert realise(c) == ("the cat sleeps under the table in the kitchen that the mother visits",
                          "le chat dort sous la table dans la cuisine que la mère visite")


def test_sample_pair_matches_realise():
    import random
    rng = random.Random(5)
    for _ in range(300):
        got = grammar.sample_pair(rng, 30, 40)
        assert got is not None and realise(got[0]) == (got[1], got[2])


# ---------------------------------------------------------------- corpus-wide checks
_ARTICLE = {"le": "m", "la": "f", "un": "m", "une": "f", "ce": "m", "cet": "m", "cette": "f",
            "mon": None, "ma": "f"}


def test_corpus_articles_agree_and_forms_are_reduced():
    gender = {}
    for n in grammar.NOUNS:
        for sg, _, g in n.fr:
            gender[sg] = g
    adjectives = {f for a in grammar.ADJECTIVES for forms in a.fr for f in forms}
    bad = re.compile(r"(^| )(à les? |de les? |de des |(le|la|ne|que|de|je|ce|ma) [aeiouéèêhœîô])")
    pairs = data.translation_pairs("test") + data.translation_pairs("test_long", n=300)
    refs = [r for rs in data.reference_sets("test", n=600) for r in rs]
    checked = 0
    for fr in [f for _, f in pairs] + refs:
        assert not bad.search(fr), fr
        toks = fr.split()
        for i, t in enumerate(toks[:-1]):
            if t in _ARTICLE and _ARTICLE[t]:
                j = i + 1
                while toks[j] in adjectives and toks[j] not in gender:  # skip a pre-noun adjective
                    j += 1
                if toks[j] in gender:
                    assert gender[toks[j]] == _ARTICLE[t], f"{t} {toks[j]} in: {fr}"
                    checked += 1
    assert checked > 1000


def test_vocabulary_is_modest():
    en, fr = set(), set()
    for e, f in data.translation_pairs("train", n=N):
        en.update(e.split())
        fr.update(f.replace("'", "' ").split())
    assert 150 <= len(en) <= 400 and 150 <= len(fr) <= 500


def test_lexicon_lookup_is_unambiguous():
    for table in (grammar.NOUNS, grammar.ADJECTIVES):
        words = [e.en if isinstance(e.en, str) else e.en[0] for e in table]
        assert len(words) == len(set(words))


# ---------------------------------------------------------------- real corpora
def test_load_parallel_tsv(tmp_path):
    p = tmp_path / "fra.txt"
    p.write_text("Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n\n"
                 "Hi.\tSalut !\n\r\nRun!\tCours !\tx\n", encoding="utf-8")
    assert data.load_parallel_tsv(p) == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !")]
    assert data.load_parallel_tsv(str(p), limit=2) == [("Go.", "Va !"), ("Hi.", "Salut !")]
    p.write_text("Go.\tVa !\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"fra\.txt, line 2"):
        data.load_parallel_tsv(p)


class _Server:
    """http.server on 127.0.0.1 (port 0) serving a folder, counting requests."""

    def __init__(self, folder):
        counter = self.requests = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=str(folder), **k)

            def do_GET(self):
                counter.append(self.path)
                super().do_GET()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path):
    (tmp_path / "www").mkdir()
    srv = _Server(tmp_path / "www")
    yield srv, tmp_path / "www"
    srv.close()


def test_download_and_cache(server, tmp_path):
    srv, www = server
    payload = b"Go.\tVa !\n" * 5000
    (www / "fra.txt").write_bytes(payload)
    sha = hashlib.sha256(payload).hexdigest()
    cache = tmp_path / "cache"
    path = data.download(f"{srv.url}/fra.txt", sha, cache_dir=cache)
    assert path == cache / "fra.txt" and path.read_bytes() == payload
    assert len(srv.requests) == 1
    assert data.download(f"{srv.url}/fra.txt", sha, cache_dir=cache) == path
    assert len(srv.requests) == 1  # served from the cache
    assert list(cache.iterdir()) == [path]  # no temporary files left


def test_download_bad_checksum_leaves_nothing(server, tmp_path):
    srv, www = server
    (www / "x.txt").write_bytes(b"hello")
    cache = tmp_path / "cache"
    with pytest.raises(data.DownloadError, match="checksum"):
        data.download(f"{srv.url}/x.txt", "0" * 64, cache_dir=cache)
    assert list(cache.iterdir()) == []


def test_download_errors_say_what_to_do(server, tmp_path):
    srv, _ = server
    cache = tmp_path / "cache"
    with pytest.raises(data.DownloadError, match="put it at"):
        data.download(f"{srv.url}/missing.txt", "0" * 64, cache_dir=cache)  # HTTP 404
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(data.DownloadError, match=str(cache / "f.txt").replace("\\", "\\\\")):
        data.download(f"http://127.0.0.1:{port}/f.txt", "0" * 64, cache_dir=cache, timeout=5)
    assert isinstance(data.DownloadError("x"), OSError)
