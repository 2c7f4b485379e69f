"""A synchronous English→French grammar: one random derivation, two sentences.

Every sentence of the course's generated corpus comes from a derivation tree (noun phrases,
clauses, relative clauses, prepositional phrases) that is *realised* twice, once in English and
once in French, so the pair is a correct translation by construction. The French side carries
the phenomena that make translation more than word-for-word substitution:

==========================  ===============================================================
phenomenon                  example (English → French)
==========================  ===============================================================
gender/number agreement     the small tables → les petites tables;  a black cow → une vache noire
elision                     the man → l'homme;  does not like → n'aime pas;  that he → qu'il
elision before a vowel      this tree → cet arbre;  my school → mon école (not "ma école")
contractions                to the dog → au chien;  near the park → près du parc;
                            to the men → aux hommes;  of the cats → des chats;  de + des → de
adjective order             the black cat → le chat noir (most adjectives follow the noun);
                            the small cat → le petit chat (closed set: petit grand jeune bon
                            mauvais joli precede it)
verb agreement              he eats → il mange;  they eat → ils mangent;  we eat → nous mangeons
negation                    does not eat → ne mange pas;  is not → n'est pas;
                            negated indefinite object: does not eat an apple → ne mange pas de pomme
prepositional phrases       on the table → sur la table;  in front of the house → devant la maison
relative clauses            the dog that eats the cake → le chien qui mange le gâteau;
                            the cake that the dog eats → le gâteau que le chien mange
predicate agreement         the women who are tired → les femmes qui sont fatiguées
coordination                the boy sleeps and the girl sings → le garçon dort et la fille chante;
                            the girl and the cow are tired → la fille et la vache sont fatiguées
nesting                     relative clauses inside PPs inside relative clauses ..., 3 to 60+ tokens
second references           the teacher → le professeur | l'enseignant;  you → vous | tu
==========================  ===============================================================

Synonyms (the last column of ``course_lib.lexicon``'s tables) give a second French reference:
the same derivation is realised with every synonym swapped (``variant=1``), so agreement follows
the synonym's own gender (the small bicycle → le petit vélo | la petite bicyclette).

The lexicon is data (``course_lib.lexicon``); the code is one small function per phrase type.
Sampling (``sample_pair``) and realisation (``realise``) are separate so that tests can build
exact derivations with ``make_np`` / ``make_clause`` / ``make_sentence``.
"""
from __future__ import annotations

import random
from functools import lru_cache
from typing import NamedTuple

from course_lib.lexicon import (ADJECTIVES, BE, BE_EN, DET_NAMES, DET_WEIGHTS, DETERMINERS, NOUNS,
                                PREPOSITIONS, PRONOUNS, VERBS)


def _fits(tags, allowed):
    return allowed == "*" or any(t in allowed for t in tags)


@lru_cache(maxsize=None)
def _nouns_for(allowed):
    return tuple(i for i, noun in enumerate(NOUNS) if _fits(noun.tags, allowed))


@lru_cache(maxsize=None)
def _adjectives_for(tags, pre):
    return tuple(i for i, adjective in enumerate(ADJECTIVES)
                 if adjective.pre == pre and _fits(tags, adjective.tags))


@lru_cache(maxsize=None)
def _verbs_for(tags, role):
    """Verbs whose ``role`` ("subj", "obj", or "" for any) accepts a noun with ``tags``."""
    out = [
        i for i, verb in enumerate(VERBS)
        if not role or (getattr(verb, role) and _fits(tags, getattr(verb, role)))
    ]
    if BE in out:  # the copula is one verb but a frequent construction: weight it up
        out += [BE] * 5
    return tuple(out)


@lru_cache(maxsize=None)
def _prepositions_for(where):
    return tuple(i for i, preposition in enumerate(PREPOSITIONS) if preposition.where in (where, "b"))


# ----------------------------------------------------------------------------------------------
# Derivation nodes
# ----------------------------------------------------------------------------------------------
class NP:
    """A noun phrase: a pronoun, or det + [pre-adj] + noun + [post-adj] + [PP | relative] [+ and NP]."""

    __slots__ = ("noun", "pron", "det", "plural", "pre", "post", "pp", "rel", "coord")

    def __init__(self, noun=None, pron=None, det="def", plural=False, pre=None, post=None,
                 pp=None, rel=None, coord=None):
        self.noun, self.pron, self.det, self.plural = noun, pron, det, plural
        self.pre, self.post, self.pp, self.rel, self.coord = pre, post, pp, rel, coord


class Clause:
    """Subject + verb + (object | to-object | predicate adjective) + [adverbial PP].

    ``gap`` is "subj" or "obj" inside a relative clause: that slot is the antecedent noun.
    """

    __slots__ = ("subj", "verb", "obj", "iobj", "adj", "neg", "pp", "gap")

    def __init__(self, subj, verb, obj=None, iobj=None, adj=None, neg=False, pp=None, gap=None):
        self.subj, self.verb, self.obj, self.iobj, self.adj = subj, verb, obj, iobj, adj
        self.neg, self.pp, self.gap = neg, pp, gap


# ----------------------------------------------------------------------------------------------
# Realisation: one walk over the tree appends English tokens to ``en`` and raw French tokens to
# ``fr`` ("à le parc"); _surface then applies contractions and elision ("au parc"). ``variant``
# is 0 for the main French words, 1 for their synonyms (the second reference).
# ----------------------------------------------------------------------------------------------
def _person(phrase, variant):
    """(person 0..5 as in je tu il nous vous ils, gender, plural) of a subject noun phrase."""
    if phrase.pron is not None:
        _, person, gender = PRONOUNS[phrase.pron].fr[variant]
        return person, gender, person >= 3
    if phrase.coord is not None:  # coordination: plural; feminine only if every conjunct is
        feminine = NOUNS[phrase.noun].fr[variant].gender == _person(phrase.coord, variant)[1] == "f"
        return 5, "f" if feminine else "m", True
    return (5 if phrase.plural else 2), NOUNS[phrase.noun].fr[variant].gender, phrase.plural


def _adjective_form(adjective, variant, gender, plural):
    return ADJECTIVES[adjective].fr[variant][(2 if plural else 0) + (gender == "f")]


def _realise_np(phrase, en, fr, variant, negated=False):
    """Realise a noun phrase; ``negated``: it is the object of a negated verb (any, de)."""
    if phrase.pron is not None:
        en.append(PRONOUNS[phrase.pron].en)
        fr.append(PRONOUNS[phrase.pron].fr[variant].word)
        return
    noun, plural, pre, post = NOUNS[phrase.noun], phrase.plural, phrase.pre, phrase.post
    singular, plural_form, gender = noun.fr[variant]
    det_en, det_fr = DETERMINERS[phrase.det]
    # English: det [pre] [post] noun ("the small black cat"); a → an before a vowel
    det = det_en[(2 if negated else 1) if plural else 0]
    first = ADJECTIVES[pre].en if pre is not None else (
        ADJECTIVES[post].en if post is not None else noun.en[0])
    en.append("an" if det == "a" and first[0] in "aeiou" else det)
    if pre is not None:
        en.append(ADJECTIVES[pre].en)
    if post is not None:
        en.append(ADJECTIVES[post].en)
    en.append(noun.en[plural])
    # French: det [pre] noun [post] ("le petit chat noir"); ne ... pas de: un/une/des → de
    fr.append("de" if negated and phrase.det == "indef" else det_fr[2 if plural else (gender == "f")])
    if pre is not None:
        fr.append(_adjective_form(pre, variant, gender, plural))
    fr.append(plural_form if plural else singular)
    if post is not None:
        fr.append(_adjective_form(post, variant, gender, plural))
    if phrase.pp is not None:
        preposition = PREPOSITIONS[phrase.pp[0]]
        en.append(preposition.en)
        fr.extend(preposition.fr)
        _realise_np(phrase.pp[1], en, fr, variant)
    if phrase.rel is not None:
        en.append("who" if "H" in noun.tags else "that")
        if phrase.rel.gap == "obj":
            fr.append("que")
        _realise_clause(phrase.rel, en, fr, variant, phrase)
    if phrase.coord is not None:
        en.append("and")
        fr.append("et")
        _realise_np(phrase.coord, en, fr, variant, negated)


def _realise_clause(clause, en, fr, variant, antecedent=None):
    """Realise a clause; ``antecedent`` is the noun phrase a relative clause hangs on."""
    if clause.gap == "subj":  # the antecedent is the subject: "qui"; "who"/"that" came from _realise_np
        fr.append("qui")
        subject = antecedent
    else:
        subject = clause.subj
        _realise_np(subject, en, fr, variant)
    person, gender, plural = _person(subject, variant)
    # English distinguishes only I (0), third singular (2) and the rest
    en_person = PRONOUNS[subject.pron].fr[0].person if subject.pron is not None else (5 if plural else 2)
    verb = VERBS[clause.verb]
    if clause.verb == BE:
        en.append(BE_EN[en_person])
        if clause.neg:
            en.append("not")
        en.append(ADJECTIVES[clause.adj].en)
    elif clause.neg:
        en.append("does not" if en_person == 2 else "do not")
        en.append(verb.en[0])
    else:
        en.append(verb.en[en_person == 2])
    if clause.neg:
        fr.append("ne")
    fr.append(verb.fr[variant][person])
    if clause.neg:
        fr.append("pas")
    if clause.adj is not None:
        fr.append(_adjective_form(clause.adj, variant, gender, plural))
    if clause.obj is not None:
        _realise_np(clause.obj, en, fr, variant, clause.neg)
    if clause.iobj is not None:
        en.append("to")
        fr.append("à")
        _realise_np(clause.iobj, en, fr, variant)
    if clause.pp is not None:
        preposition = PREPOSITIONS[clause.pp[0]]
        en.append(preposition.en)
        fr.extend(preposition.fr)
        _realise_np(clause.pp[1], en, fr, variant)


_VOWEL_START = frozenset("aeiouyhàâäéèêëîïôöûüœ")  # every h-word in the lexicon is a silent h
_ELIDE = {"le": "l'", "la": "l'", "de": "d'", "que": "qu'", "ne": "n'", "je": "j'"}
_BEFORE_VOWEL = {"ce": "cet", "ma": "mon"}  # ce arbre → cet arbre, ma école → mon école
_CONTRACT = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}
_SPECIAL = frozenset(["à", *_ELIDE, *_BEFORE_VOWEL])
_CONJ_FR = {"and": "et", "but": "mais"}


def _surface(tokens):
    """Contractions (à le → au, de les → des, de des → de), then elision (le arbre → l'arbre)."""
    tokens = tokens + [""]
    out, i, n = [], 0, len(tokens) - 1
    while i < n:
        token = tokens[i]
        i += 1
        if token not in _SPECIAL:  # fast path: most tokens
            out.append(token)
            continue
        following = tokens[i]
        if token == "à" or token == "de":
            if following == "les" or (following == "le" and tokens[i + 1][:1] not in _VOWEL_START):
                out.append(_CONTRACT[token, following])  # (le + vowel is elided instead: de l'arbre)
                i += 1
                continue
            if token == "de" and following == "des":  # près de des arbres → près d'arbres
                tokens[i] = "de"
                continue
        if following[:1] in _VOWEL_START:
            if token in _ELIDE:  # written attached, as in real French: l'homme, n'aime
                out.append(_ELIDE[token] + following)
                i += 1
                continue
            token = _BEFORE_VOWEL.get(token, token)
        out.append(token)
    return out


def realise(sentence, variant=0):
    """(English, French) strings of a derivation.

    ``sentence`` is an ``NP``, a ``Clause`` or a sentence ``(clauses, conjunctions)`` from
    ``make_sentence``/``sample_pair`` (only full sentences end with " ."). ``variant=1``
    realises the French with every synonym swapped (the second reference).
    """
    en, fr = [], []
    if isinstance(sentence, NP):
        _realise_np(sentence, en, fr, variant)
    elif isinstance(sentence, Clause):
        _realise_clause(sentence, en, fr, variant)
    else:
        clauses, conjunctions = sentence
        for i, clause in enumerate(clauses):
            if i:
                en.append(conjunctions[i - 1])
                fr.append(_CONJ_FR[conjunctions[i - 1]])
            _realise_clause(clause, en, fr, variant)
        en.append(".")
        fr.append(".")
    return " ".join(en), " ".join(_surface(fr))


# ----------------------------------------------------------------------------------------------
# Random derivations. A sentence's ``complexity`` in [0, 1] raises the chance of adjectives,
# modifiers, nesting and coordination, and so the length. ``draw()`` is the generator's
# ``random()``: a uniform number in [0, 1). Lookups that depend only on the lexicon are
# precomputed per noun (this code runs ~10^6 times per corpus).
# ----------------------------------------------------------------------------------------------
_MAX_DEPTH = 3  # nesting depth of PPs/relative clauses inside noun phrases
_DET_TABLE = [d for d, w in zip(DET_NAMES, DET_WEIGHTS) for _ in range(round(100 * w))]
_PRE = [_adjectives_for(noun.tags, True) for noun in NOUNS]
_POST = [_adjectives_for(noun.tags, False) for noun in NOUNS]
_SUBJ_GAP = [_verbs_for(noun.tags, "subj") for noun in NOUNS]  # verbs for "the N that VERB ..."
_OBJ_GAP = [_verbs_for(noun.tags, "obj") for noun in NOUNS]  # verbs for "the N that X VERBs"
_ALL_VERBS = _verbs_for("", "")
_NP_PREPOSITIONS = _prepositions_for("n")
_VP_PREPOSITIONS = _prepositions_for("v")
_PREPOSITION_NOUNS = [_nouns_for(preposition.tags) for preposition in PREPOSITIONS]


class Odds(NamedTuple):
    """The probabilities of one sentence's optional parts (at the top level; nesting lowers some)."""

    pre_adjective: float  # an adjective before the noun
    post_adjective: float  # an adjective after the noun
    modifier: float  # a PP or relative clause on a noun phrase
    adverbial: float  # a PP on a clause
    coordination: float  # "the girl and the cow" as a subject or object


def _sample_np(draw, odds, depth, nouns, coordination_ok=False):
    """A random noun phrase headed by one of ``nouns`` (indices into NOUNS)."""
    noun = nouns[int(draw() * len(nouns))]
    phrase = NP(noun, None, _DET_TABLE[int(draw() * 100)], draw() < 0.4)
    if draw() < odds.pre_adjective:
        adjectives = _PRE[noun]
        phrase.pre = adjectives[int(draw() * len(adjectives))]
    if draw() < odds.post_adjective:
        adjectives = _POST[noun]
        phrase.post = adjectives[int(draw() * len(adjectives))]
    if depth < _MAX_DEPTH and draw() < odds.modifier * 0.6 ** depth:
        if draw() < 0.45:
            preposition = _NP_PREPOSITIONS[int(draw() * len(_NP_PREPOSITIONS))]
            phrase.pp = (preposition, _sample_np(draw, odds, depth + 1, _PREPOSITION_NOUNS[preposition]))
        else:
            gap = "subj" if draw() < 0.55 else "obj"
            verbs = (_SUBJ_GAP if gap == "subj" else _OBJ_GAP)[noun]
            if verbs:
                phrase.rel = _sample_clause(draw, odds, depth + 1, verbs[int(draw() * len(verbs))], gap, noun)
    if coordination_ok and depth == 0 and draw() < odds.coordination:
        phrase.coord = _sample_np(draw, odds, _MAX_DEPTH, nouns)
    return phrase


def _sample_clause(draw, odds, depth, verb, gap=None, antecedent=None):
    """A clause with ``verb``; in a relative clause, ``antecedent`` is the antecedent noun's index."""
    entry = VERBS[verb]
    clause = Clause(None, verb, None, None, None, draw() < 0.2, None, gap)
    if gap == "subj":
        tags = NOUNS[antecedent].tags
    elif "H" in entry.subj and draw() < (0.2 if depth == 0 else 0.1):
        clause.subj = NP(None, int(draw() * len(PRONOUNS)))
        tags = "H"
    else:
        clause.subj = _sample_np(draw, odds, depth, _nouns_for(entry.subj), True)
        tags = NOUNS[clause.subj.noun].tags
    if verb == BE:
        adjectives = _adjectives_for(tags, draw() < 0.25) or _adjectives_for(tags, False)
        clause.adj = adjectives[int(draw() * len(adjectives))]
    elif entry.obj and gap != "obj":
        clause.obj = _sample_np(draw, odds, depth, _nouns_for(entry.obj), not clause.neg)
    if entry.iobj:
        clause.iobj = _sample_np(draw, odds, depth + 1, _nouns_for(entry.iobj))
    if draw() < odds.adverbial * 0.5 ** depth:
        preposition = _VP_PREPOSITIONS[int(draw() * len(_VP_PREPOSITIONS))]
        clause.pp = (preposition, _sample_np(draw, odds, depth + 1, _PREPOSITION_NOUNS[preposition]))
    return clause


def _odds(complexity):
    """The ``Odds`` of a sentence of ``complexity`` in [0, 1]."""
    return Odds(0.12 + 0.25 * complexity, 0.15 + 0.35 * complexity, 0.08 + 0.6 * complexity,
                0.1 + 0.35 * complexity, 0.04 + 0.1 * complexity)


def _random_clause(draw, complexity):
    return _sample_clause(draw, _odds(complexity), 0, _ALL_VERBS[int(draw() * len(_ALL_VERBS))])


def sample_pair(rng: random.Random, target: int, max_len: int, min_len: int = 1, accept=None):
    """A random sentence of about ``target`` English tokens (incl. " ."), at most ``max_len``.

    Clauses, each sized by the room left (a bigger room means more adjectives, PPs and nested
    relative clauses), are joined by "and"/"but" until the length reaches ``target``; a clause
    that would overflow ``max_len`` is redrawn. Returns ``(derivation, english, french)``, or
    None when the result is shorter than ``min_len`` or ``accept(english)`` is false (checked
    before the French is finished, which saves time). ``realise(derivation)`` gives the same pair.
    """
    draw = rng.random
    clauses, conjunctions, en, fr = [], [], [], []
    length = 1  # the final "."
    for _ in range(12):
        room = target - length - (1 if clauses else 0)
        complexity = min(1.0, max(0.0, (room - 5) / 20)) * (0.5 + 0.5 * draw())
        clause = _random_clause(draw, complexity)
        clause_en, clause_fr = [], []
        _realise_clause(clause, clause_en, clause_fr, 0)
        clause_en = " ".join(clause_en)
        extra = clause_en.count(" ") + 1 + (1 if clauses else 0)  # multi-word entries count as several
        if length + extra > max_len:
            continue
        if clauses:
            conjunction = "and" if draw() < 0.75 else "but"
            conjunctions.append(conjunction)
            en.append(conjunction)
            fr.append(_CONJ_FR[conjunction])
        clauses.append(clause)
        en.append(clause_en)
        fr += clause_fr
        length += extra
        if length >= target - 2:
            break
    if length < min_len or not clauses:
        return None
    en.append(".")
    en = " ".join(en)
    if accept is not None and not accept(en):
        return None
    fr.append(".")
    return (clauses, conjunctions), en, " ".join(_surface(fr))


# ----------------------------------------------------------------------------------------------
# Building exact derivations by hand (tests, notebooks): words may be English or French.
# ----------------------------------------------------------------------------------------------
def _index(table, word, what):
    for i, entry in enumerate(table):
        en = entry.en if isinstance(entry.en, str) else entry.en[0]
        fr = entry.fr[0]
        fr = fr if isinstance(fr, str) else fr[0]
        if word in (en, fr, en.replace(" ", "_")):
            return i
    raise KeyError(f"no {what} {word!r} in the grammar's lexicon")


def make_np(noun, determiner="def", number="sg", adjectives=(), pp=None, rel=None, coord=None):
    """A noun phrase; ``pp=("on", make_np(...))``; ``rel`` is a clause with a None subject or object."""
    if noun in [p.en for p in PRONOUNS] + [p.fr[0].word for p in PRONOUNS]:
        return NP(pron=_index(PRONOUNS, noun, "pronoun"))
    phrase = NP(_index(NOUNS, noun, "noun"), det=determiner, plural=number == "pl", coord=coord)
    for name in ([adjectives] if isinstance(adjectives, str) else adjectives):
        adjective = _index(ADJECTIVES, name, "adjective")
        if ADJECTIVES[adjective].pre:
            phrase.pre = adjective
        else:
            phrase.post = adjective
    if pp is not None:
        phrase.pp = (_index(PREPOSITIONS, pp[0], "preposition"), pp[1])
    if rel is not None:
        rel.gap = "subj" if rel.subj is None else "obj"
        phrase.rel = rel
    return phrase


def make_clause(subject, verb, obj=None, *, to=None, adjective=None, negated=False, pp=None):
    """A clause; ``verb="be"`` with ``adjective=...`` for a predicate; ``to`` is the à-object."""
    verb_index = BE if verb in ("be", "être") else _index(VERBS, verb, "verb")
    if isinstance(subject, str):
        subject = make_np(subject)
    adj = _index(ADJECTIVES, adjective, "adjective") if adjective is not None else None
    pp = (_index(PREPOSITIONS, pp[0], "preposition"), pp[1]) if pp is not None else None
    return Clause(subject, verb_index, obj=obj, iobj=to, adj=adj, neg=negated, pp=pp)


def make_sentence(*clauses, conjunction="and"):
    return list(clauses), [conjunction] * (len(clauses) - 1)


def realise_np(noun, adjective=None, determiner="def", number="sg", variant=0, **kwargs):
    """``realise_np(noun="table", adjective="petit", number="pl")`` → ("the small tables", "les petites
    tables")."""
    adjectives = kwargs.pop("adjectives", () if adjective is None else (adjective,))
    return realise(make_np(noun, determiner, number, adjectives, **kwargs), variant)
