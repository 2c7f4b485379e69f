"""A generated sentence as a derivation tree (``NP``, ``Clause``) and its realisation: the English
sentence and its French translation, from one walk over the tree (``course_lib.grammar`` samples
the trees)."""
from __future__ import annotations


from course_lib.lexicon import (ADJECTIVES, BE, BE_EN, DETERMINERS, NOUNS,
                                PREPOSITIONS, PRONOUNS, VERBS)


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
# ``fr`` ("à le parc"); surface then applies contractions and elision ("au parc"). ``variant``
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
        realise_clause(phrase.rel, en, fr, variant, phrase)
    if phrase.coord is not None:
        en.append("and")
        fr.append("et")
        _realise_np(phrase.coord, en, fr, variant, negated)


def realise_clause(clause, en, fr, variant, antecedent=None):
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
CONJUNCTIONS_FR = {"and": "et", "but": "mais"}


def surface(tokens):
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
        realise_clause(sentence, en, fr, variant)
    else:
        clauses, conjunctions = sentence
        for i, clause in enumerate(clauses):
            if i:
                en.append(conjunctions[i - 1])
                fr.append(CONJUNCTIONS_FR[conjunctions[i - 1]])
            realise_clause(clause, en, fr, variant)
        en.append(".")
        fr.append(".")
    return " ".join(en), " ".join(surface(fr))
