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

from course_lib.lexicon import (ADJECTIVES, BE, DET_NAMES, DET_WEIGHTS, NOUNS,
                                PREPOSITIONS, PRONOUNS, VERBS)
from course_lib.sentences import CONJUNCTIONS_FR, NP, Clause, realise, realise_clause, surface


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
        realise_clause(clause, clause_en, clause_fr, 0)
        clause_en = " ".join(clause_en)
        extra = clause_en.count(" ") + 1 + (1 if clauses else 0)  # multi-word entries count as several
        if length + extra > max_len:
            continue
        if clauses:
            conjunction = "and" if draw() < 0.75 else "but"
            conjunctions.append(conjunction)
            en.append(conjunction)
            fr.append(CONJUNCTIONS_FR[conjunction])
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
    return (clauses, conjunctions), en, " ".join(surface(fr))


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
