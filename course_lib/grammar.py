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

Synonyms (``alt`` columns below) give a second French reference: the same derivation is realised
with every synonym swapped (``variant=1``), so agreement follows the synonym's own gender
(the small bicycle → le petit vélo | la petite bicyclette).

The lexicon is data (the tables below); the code is one small function per phrase type.
Sampling (``sample_pair``) and realisation (``realise``) are separate so that tests can build
exact derivations with ``make_np`` / ``make_clause`` / ``make_sentence``.
"""
from __future__ import annotations

import random
from functools import lru_cache

# ----------------------------------------------------------------------------------------------
# Lexicon. Tags say which slots a word may fill (semantic selection keeps sentences sensible):
# H human, A animal, T portable thing, F food, R readable, O openable, C container ("in"),
# U surface ("on"), B something one can be under, L landmark ("near", "behind"), P place, V vehicle.
# ----------------------------------------------------------------------------------------------
_NOUNS = """
man men | homme hommes m | H
woman women | femme femmes f | H
boy boys | garçon garçons m | H
girl girls | fille filles f | H
child children | enfant enfants m | H
teacher teachers | professeur professeurs m | H | enseignant enseignants m
student students | étudiant étudiants m | H | élève élèves m
doctor doctors | médecin médecins m | H | docteur docteurs m
friend friends | ami amis m | H | copain copains m
neighbor neighbors | voisin voisins m | H
sister sisters | sœur sœurs f | H
brother brothers | frère frères m | H
mother mothers | mère mères f | H
father fathers | père pères m | H
uncle uncles | oncle oncles m | H
actress actresses | actrice actrices f | H
dog dogs | chien chiens m | A
cat cats | chat chats m | A
bird birds | oiseau oiseaux m | A
horse horses | cheval chevaux m | A
mouse mice | souris souris f | A
cow cows | vache vaches f | A
rabbit rabbits | lapin lapins m | A
fox foxes | renard renards m | A
elephant elephants | éléphant éléphants m | A
owl owls | chouette chouettes f | A
bear bears | ours ours m | A
spider spiders | araignée araignées f | A
apple apples | pomme pommes f | TF
cake cakes | gâteau gâteaux m | TF
orange oranges | orange oranges f | TF
egg eggs | œuf œufs m | TF
carrot carrots | carotte carottes f | TF
cheese cheeses | fromage fromages m | TF
book books | livre livres m | TRO | bouquin bouquins m
letter letters | lettre lettres f | TRO
newspaper newspapers | journal journaux m | TR
map maps | carte cartes f | TR
box boxes | boîte boîtes f | TOCU
bag bags | sac sacs m | TOC
bottle bottles | bouteille bouteilles f | TO
key keys | clé clés f | T
glass glasses | verre verres m | T
ball balls | ballon ballons m | T
hat hats | chapeau chapeaux m | T
umbrella umbrellas | parapluie parapluies m | T
flower flowers | fleur fleurs f | T
phone phones | téléphone téléphones m | T
computer computers | ordinateur ordinateurs m | T
chair chairs | chaise chaises f | TUBL
table tables | table tables f | UBL
bed beds | lit lits m | UBL
door doors | porte portes f | OL
window windows | fenêtre fenêtres f | OL
car cars | voiture voitures f | VCUBL | auto autos f
bicycle bicycles | vélo vélos m | VL | bicyclette bicyclettes f
tree trees | arbre arbres m | BL
garden gardens | jardin jardins m | PL
park parks | parc parcs m | PL
house houses | maison maisons f | PL
kitchen kitchens | cuisine cuisines f | PL
school schools | école écoles f | PL
street streets | rue rues f | PL
city cities | ville villes f | PL
forest forests | forêt forêts f | PL
station stations | gare gares f | PL
church churches | église églises f | PL
hospital hospitals | hôpital hôpitaux m | PL
office offices | bureau bureaux m | PL
shop shops | magasin magasins m | PL | boutique boutiques f
market markets | marché marchés m | PL
library libraries | bibliothèque bibliothèques f | PL
airport airports | aéroport aéroports m | PL
bridge bridges | pont ponts m | UBL
"""

# en | fr forms ms fs mp fp | pre/post | tags it applies to (* = any) | alternative forms
_ADJECTIVES = """
small | petit petite petits petites | pre | *
big | grand grande grands grandes | pre | *
young | jeune jeune jeunes jeunes | pre | HA
good | bon bonne bons bonnes | pre | *
bad | mauvais mauvaise mauvais mauvaises | pre | *
pretty | joli jolie jolis jolies | pre | *
black | noir noire noirs noires | post | TAVOUB
white | blanc blanche blancs blanches | post | TAVOUB
red | rouge rouge rouges rouges | post | TAVOUB
green | vert verte verts vertes | post | TAVOUB
blue | bleu bleue bleus bleues | post | TAVOUB
yellow | jaune jaune jaunes jaunes | post | TAVOUB
grey | gris grise gris grises | post | TAVOUB
happy | heureux heureuse heureux heureuses | post | HA | content contente contents contentes
sad | triste triste tristes tristes | post | HA | malheureux malheureuse malheureux malheureuses
tired | fatigué fatiguée fatigués fatiguées | post | HA
calm | calme calme calmes calmes | post | HAP | tranquille tranquille tranquilles tranquilles
hungry | affamé affamée affamés affamées | post | HA
lazy | paresseux paresseuse paresseux paresseuses | post | HA
clever | intelligent intelligente intelligents intelligentes | post | H
kind | gentil gentille gentils gentilles | post | H | aimable aimable aimables aimables
rich | riche riche riches riches | post | H
famous | célèbre célèbre célèbres célèbres | post | HP
heavy | lourd lourde lourds lourdes | post | TUV
new | neuf neuve neufs neuves | post | TRV
expensive | cher chère chers chères | post | TVF | coûteux coûteuse coûteux coûteuses
broken | cassé cassée cassés cassées | post | TVO
clean | propre propre propres propres | post | TVUP
dirty | sale sale sales sales | post | TVUPA
empty | vide vide vides vides | post | CP
"""

# en base, en 3sg ("_" joins words) | fr je tu il nous vous ils | subject tags | object tags
# (- none) | tags after "to"/"à" (- none) | alternative French forms
_VERBS = """
eat eats | mange manges mange mangeons mangez mangent | HA | F | -
see sees | vois vois voit voyons voyez voient | HA | HATPVUBLO | -
watch watches | regarde regardes regarde regardons regardez regardent | HA | HATPVUBLO | - | observe observes observe observons observez observent
like likes | aime aimes aime aimons aimez aiment | H | HATPV | - | apprécie apprécies apprécie apprécions appréciez apprécient
love loves | adore adores adore adorons adorez adorent | H | HATPV | -
find finds | trouve trouves trouve trouvons trouvez trouvent | HA | TAV | -
buy buys | achète achètes achète achetons achetez achètent | H | TV | -
carry carries | porte portes porte portons portez portent | H | T | -
read reads | lis lis lit lisons lisez lisent | H | R | -
open opens | ouvre ouvres ouvre ouvrons ouvrez ouvrent | H | O | -
want wants | veux veux veut voulons voulez veulent | HA | TV | - | désire désires désire désirons désirez désirent
follow follows | suis suis suit suivons suivez suivent | HA | HA | -
call calls | appelle appelles appelle appelons appelez appellent | H | HA | -
help helps | aide aides aide aidons aidez aident | H | HA | -
wait_for waits_for | attends attends attend attendons attendez attendent | HA | HAV | -
look_for looks_for | cherche cherches cherche cherchons cherchez cherchent | HA | HATV | - | recherche recherches recherche recherchons recherchez recherchent
know knows | connais connais connaît connaissons connaissez connaissent | H | HP | -
wash washes | lave laves lave lavons lavez lavent | H | TVA | -
visit visits | visite visites visite visitons visitez visitent | H | P | -
leave leaves | quitte quittes quitte quittons quittez quittent | HA | P | -
listen_to listens_to | écoute écoutes écoute écoutons écoutez écoutent | HA | HA | -
give gives | donne donnes donne donnons donnez donnent | H | TR | HA
show shows | montre montres montre montrons montrez montrent | H | TRV | H
talk talks | parle parles parle parlons parlez parlent | H | - | HA
go goes | vais vas va allons allez vont | HA | - | P
sleep sleeps | dors dors dort dormons dormez dorment | HA | - | -
run runs | cours cours court courons courez courent | HA | - | -
sing sings | chante chantes chante chantons chantez chantent | HA | - | -
work works | travaille travailles travaille travaillons travaillez travaillent | H | - | -
walk walks | marche marches marche marchons marchez marchent | HA | - | -
play plays | joue joues joue jouons jouez jouent | HA | - | -
swim swims | nage nages nage nageons nagez nagent | HA | - | -
laugh laughs | ris ris rit rions riez rient | H | - | -
arrive arrives | arrive arrives arrive arrivons arrivez arrivent | HA | - | -
"""
_BE_EN = ("am", "are", "is", "are", "are", "are")  # indexed by person 0..5 like the French
_BE_FR = ("suis", "es", "est", "sommes", "êtes", "sont")

# en | fr | person 0..5 (je tu il nous vous ils) | gender | alternative "fr person gender"
_PRONOUNS = """
i | je | 0 | m
you | vous | 4 | m | tu 1 m
he | il | 2 | m
she | elle | 2 | f
we | nous | 3 | m
they | ils | 5 | m | elles 5 f
"""

# en | fr words | tags of the object | where: n = modifies a noun, v = modifies a clause, b = both
_PREPOSITIONS = """
in | dans | PC | b
on | sur | U | b
under | sous | B | b
near | près de | PL | b
next_to | à côté de | LHA | b
in_front_of | devant | PLHA | b
behind | derrière | PLHA | b
far_from | loin de | P | b
with | avec | HA | v
for | pour | HA | v
of | de | H | n
"""

# determiner → English (sg, pl, pl under negation), French (m sg, f sg, pl)
DETERMINERS = {
    "def": (("the", "the", "the"), ("le", "la", "les")),
    "indef": (("a", "some", "any"), ("un", "une", "des")),
    "dem": (("this", "these", "these"), ("ce", "cette", "ces")),
    "my": (("my", "my", "my"), ("mon", "ma", "mes")),
    "our": (("our", "our", "our"), ("notre", "notre", "nos")),
}
DET_NAMES = tuple(DETERMINERS)
_DET_WEIGHTS = (0.5, 0.27, 0.1, 0.09, 0.04)  # def, indef, dem, my, our


def _rows(table):
    for line in table.strip().splitlines():
        yield [f.strip() for f in line.split("|")]


def _w(s):  # "wait_for" → "wait for"
    return s.replace("_", " ")


NOUNS, ADJECTIVES, VERBS, PRONOUNS, PREPOSITIONS = [], [], [], [], []
for f in _rows(_NOUNS):
    en, fr, tags = f[0].split(), f[1].split(), f[2]
    alt = f[3].split() if len(f) > 3 else fr
    NOUNS.append({"en": tuple(en), "fr": ((fr[0], fr[1], fr[2]), (alt[0], alt[1], alt[2])), "tags": tags})
for f in _rows(_ADJECTIVES):
    forms = tuple(f[1].split())
    alt = tuple(f[4].split()) if len(f) > 4 else forms
    ADJECTIVES.append({"en": f[0], "fr": (forms, alt), "pre": f[2] == "pre", "tags": f[3]})
for f in _rows(_VERBS):
    en = tuple(_w(s) for s in f[0].split())
    conj = tuple(f[1].split())
    alt = tuple(f[5].split()) if len(f) > 5 else conj
    VERBS.append({"en": en, "fr": (conj, alt), "subj": f[2], "obj": "" if f[3] == "-" else f[3],
                  "iobj": "" if f[4] == "-" else f[4]})
VERBS.append({"en": ("be", "is"), "fr": (_BE_FR, _BE_FR), "subj": "HATPVUBLOFRC", "obj": "", "iobj": "",
              "copula": True})
BE = len(VERBS) - 1
for f in _rows(_PRONOUNS):
    main = (f[1], int(f[2]), f[3])
    alt = f[4].split() if len(f) > 4 else None
    PRONOUNS.append({"en": f[0], "fr": (main, (alt[0], int(alt[1]), alt[2]) if alt else main)})
for f in _rows(_PREPOSITIONS):
    PREPOSITIONS.append({"en": _w(f[0]), "fr": tuple(f[1].split()), "tags": f[2], "where": f[3]})


def _fits(tags, allowed):
    return allowed == "*" or any(t in allowed for t in tags)


@lru_cache(maxsize=None)
def _nouns_for(allowed):
    return tuple(i for i, n in enumerate(NOUNS) if _fits(n["tags"], allowed))


@lru_cache(maxsize=None)
def _adjectives_for(tags, pre):
    return tuple(i for i, a in enumerate(ADJECTIVES) if a["pre"] == pre and _fits(tags, a["tags"]))


@lru_cache(maxsize=None)
def _verbs_for(tags, role):
    """Verbs whose ``role`` ("subj", "obj", or "" for any) accepts a noun with ``tags``."""
    out = [i for i, v in enumerate(VERBS) if not role or (v[role] and _fits(tags, v[role]))]
    if BE in out:  # the copula is one verb but a frequent construction: weight it up
        out += [BE] * 5
    return tuple(out)


@lru_cache(maxsize=None)
def _preps_for(where):
    return tuple(i for i, p in enumerate(PREPOSITIONS) if p["where"] in (where, "b"))


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
# ``fr`` ("à le parc"); _surface then applies contractions and elision ("au parc").
# ----------------------------------------------------------------------------------------------
def _person(np, v):
    """(person 0..5 as in je tu il nous vous ils, gender, plural) of a subject under variant ``v``."""
    if np.pron is not None:
        _, person, gender = PRONOUNS[np.pron]["fr"][v]
        return person, gender, person >= 3
    if np.coord is not None:  # coordination: plural; feminine only if every conjunct is
        g = "f" if NOUNS[np.noun]["fr"][v][2] == _person(np.coord, v)[1] == "f" else "m"
        return 5, g, True
    return (5 if np.plural else 2), NOUNS[np.noun]["fr"][v][2], np.plural


def _adj_form(a, v, gender, plural):
    return ADJECTIVES[a]["fr"][v][(2 if plural else 0) + (gender == "f")]


def _np(np, en, fr, v, neg=False):
    """Realise a noun phrase; ``neg``: it is the object of a negated verb (any, de)."""
    if np.pron is not None:
        en.append(PRONOUNS[np.pron]["en"])
        fr.append(PRONOUNS[np.pron]["fr"][v][0])
        return
    noun, plural, pre, post = NOUNS[np.noun], np.plural, np.pre, np.post
    sg, pl, gender = noun["fr"][v]
    det_en, det_fr = DETERMINERS[np.det]
    # English: det [pre] [post] noun ("the small black cat"); a → an before a vowel
    det = det_en[(2 if neg else 1) if plural else 0]
    first = ADJECTIVES[pre]["en"] if pre is not None else (
        ADJECTIVES[post]["en"] if post is not None else noun["en"][0])
    en.append("an" if det == "a" and first[0] in "aeiou" else det)
    if pre is not None:
        en.append(ADJECTIVES[pre]["en"])
    if post is not None:
        en.append(ADJECTIVES[post]["en"])
    en.append(noun["en"][plural])
    # French: det [pre] noun [post] ("le petit chat noir"); ne ... pas de: un/une/des → de
    fr.append("de" if neg and np.det == "indef" else det_fr[2 if plural else (gender == "f")])
    if pre is not None:
        fr.append(_adj_form(pre, v, gender, plural))
    fr.append(pl if plural else sg)
    if post is not None:
        fr.append(_adj_form(post, v, gender, plural))
    if np.pp is not None:
        prep = PREPOSITIONS[np.pp[0]]
        en.append(prep["en"])
        fr.extend(prep["fr"])
        _np(np.pp[1], en, fr, v)
    if np.rel is not None:
        en.append("who" if "H" in noun["tags"] else "that")
        if np.rel.gap == "obj":
            fr.append("que")
        _clause(np.rel, en, fr, v, np)
    if np.coord is not None:
        en.append("and")
        fr.append("et")
        _np(np.coord, en, fr, v, neg)


def _clause(c, en, fr, v, ante=None):
    """Realise a clause; ``ante`` is the antecedent noun phrase of a relative clause."""
    if c.gap == "subj":  # the antecedent is the subject: "qui"; "who"/"that" came from _np
        fr.append("qui")
        subj = ante
    else:
        subj = c.subj
        _np(subj, en, fr, v)
    person, gender, plural = _person(subj, v)
    # English distinguishes only I (0), third singular (2) and the rest
    en_person = PRONOUNS[subj.pron]["fr"][0][1] if subj.pron is not None else (
        5 if plural else 2)
    verb = VERBS[c.verb]
    if c.verb == BE:
        en.append(_BE_EN[en_person])
        if c.neg:
            en.append("not")
        en.append(ADJECTIVES[c.adj]["en"])
    elif c.neg:
        en.append("does not" if en_person == 2 else "do not")
        en.append(verb["en"][0])
    else:
        en.append(verb["en"][en_person == 2])
    if c.neg:
        fr.append("ne")
    fr.append(verb["fr"][v][person])
    if c.neg:
        fr.append("pas")
    if c.adj is not None:
        fr.append(_adj_form(c.adj, v, gender, plural))
    if c.obj is not None:
        _np(c.obj, en, fr, v, c.neg)
    if c.iobj is not None:
        en.append("to")
        fr.append("à")
        _np(c.iobj, en, fr, v)
    if c.pp is not None:
        prep = PREPOSITIONS[c.pp[0]]
        en.append(prep["en"])
        fr.extend(prep["fr"])
        _np(c.pp[1], en, fr, v)


_VOWEL_START = frozenset("aeiouyhàâäéèêëîïôöûüœ")  # every h-word in the lexicon is a silent h
_ELIDE = {"le": "l'", "la": "l'", "de": "d'", "que": "qu'", "ne": "n'", "je": "j'"}
_BEFORE_VOWEL = {"ce": "cet", "ma": "mon"}  # ce arbre → cet arbre, ma école → mon école
_CONTRACT = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}
_SPECIAL = frozenset(["à", *_ELIDE, *_BEFORE_VOWEL])
_CONJ_FR = {"and": "et", "but": "mais"}


def _surface(toks):
    """Contractions (à le → au, de les → des, de des → de), then elision (le arbre → l'arbre)."""
    toks = toks + [""]
    out, i, n = [], 0, len(toks) - 1
    while i < n:
        t = toks[i]
        i += 1
        if t not in _SPECIAL:  # fast path: most tokens
            out.append(t)
            continue
        nxt = toks[i]
        if t == "à" or t == "de":
            if nxt == "les" or (nxt == "le" and toks[i + 1][:1] not in _VOWEL_START):
                out.append(_CONTRACT[t, nxt])  # (le + vowel is elided instead: de l'arbre)
                i += 1
                continue
            if t == "de" and nxt == "des":  # près de des arbres → près d'arbres
                toks[i] = "de"
                continue
        if nxt[:1] in _VOWEL_START:
            if t in _ELIDE:  # written attached, as in real French: l'homme, n'aime
                out.append(_ELIDE[t] + nxt)
                i += 1
                continue
            t = _BEFORE_VOWEL.get(t, t)
        out.append(t)
    return out


def realise(sentence, variant=0):
    """(English, French) strings of a derivation.

    ``sentence`` is an ``NP``, a ``Clause`` or a sentence ``(clauses, conjunctions)`` from
    ``make_sentence``/``sample_pair`` (only full sentences end with " ."). ``variant=1``
    realises the French with every synonym swapped (the second reference).
    """
    en, fr = [], []
    if isinstance(sentence, NP):
        _np(sentence, en, fr, variant)
    elif isinstance(sentence, Clause):
        _clause(sentence, en, fr, variant)
    else:
        clauses, conjs = sentence
        for i, c in enumerate(clauses):
            if i:
                en.append(conjs[i - 1])
                fr.append(_CONJ_FR[conjs[i - 1]])
            _clause(c, en, fr, variant)
        en.append(".")
        fr.append(".")
    return " ".join(en), " ".join(_surface(fr))


# ----------------------------------------------------------------------------------------------
# Random derivations. ``cx`` in [0, 1] is the sentence's complexity: it raises the chance of
# adjectives, modifiers, nesting and coordination, and so the length. Lookups that depend only
# on the lexicon are precomputed per noun (this code runs ~10^6 times per corpus).
# ----------------------------------------------------------------------------------------------
_MAX_DEPTH = 3  # nesting depth of PPs/relative clauses inside noun phrases
_DET_TABLE = [d for d, w in zip(DET_NAMES, _DET_WEIGHTS) for _ in range(round(100 * w))]
_PRE = [_adjectives_for(n["tags"], True) for n in NOUNS]
_POST = [_adjectives_for(n["tags"], False) for n in NOUNS]
_SUBJ_GAP = [_verbs_for(n["tags"], "subj") for n in NOUNS]  # verbs for "the N that VERB ..."
_OBJ_GAP = [_verbs_for(n["tags"], "obj") for n in NOUNS]  # verbs for "the N that X VERBs"
_ALL_VERBS = _verbs_for("", "")
_NP_PREPS = _preps_for("n")
_VP_PREPS = _preps_for("v")
_PREP_NOUNS = [_nouns_for(p["tags"]) for p in PREPOSITIONS]


def _sample_np(r, p, depth, nouns, coord_ok=False):
    """p = (p_pre, p_post, p_modifier, p_adverbial_pp, p_coordination) of this sentence."""
    noun = nouns[int(r() * len(nouns))]
    np = NP(noun, None, _DET_TABLE[int(r() * 100)], r() < 0.4)
    if r() < p[0]:
        adjs = _PRE[noun]
        np.pre = adjs[int(r() * len(adjs))]
    if r() < p[1]:
        adjs = _POST[noun]
        np.post = adjs[int(r() * len(adjs))]
    if depth < _MAX_DEPTH and r() < p[2] * 0.6 ** depth:
        if r() < 0.45:
            prep = _NP_PREPS[int(r() * len(_NP_PREPS))]
            np.pp = (prep, _sample_np(r, p, depth + 1, _PREP_NOUNS[prep]))
        else:
            gap = "subj" if r() < 0.55 else "obj"
            verbs = (_SUBJ_GAP if gap == "subj" else _OBJ_GAP)[noun]
            if verbs:
                np.rel = _sample_clause(r, p, depth + 1, verbs[int(r() * len(verbs))], gap, noun)
    if coord_ok and depth == 0 and r() < p[4]:
        np.coord = _sample_np(r, p, _MAX_DEPTH, nouns)
    return np


def _sample_clause(r, p, depth, verb, gap=None, ante=None):
    """A clause with ``verb``; in a relative clause, ``ante`` is the antecedent noun's index."""
    v = VERBS[verb]
    c = Clause(None, verb, None, None, None, r() < 0.2, None, gap)
    if gap == "subj":
        tags = NOUNS[ante]["tags"]
    elif "H" in v["subj"] and r() < (0.2 if depth == 0 else 0.1):
        c.subj = NP(None, int(r() * len(PRONOUNS)))
        tags = "H"
    else:
        c.subj = _sample_np(r, p, depth, _nouns_for(v["subj"]), True)
        tags = NOUNS[c.subj.noun]["tags"]
    if verb == BE:
        adjs = _adjectives_for(tags, r() < 0.25) or _adjectives_for(tags, False)
        c.adj = adjs[int(r() * len(adjs))]
    elif v["obj"] and gap != "obj":
        c.obj = _sample_np(r, p, depth, _nouns_for(v["obj"]), not c.neg)
    if v["iobj"]:
        c.iobj = _sample_np(r, p, depth + 1, _nouns_for(v["iobj"]))
    if r() < p[3] * 0.5 ** depth:
        prep = _VP_PREPS[int(r() * len(_VP_PREPS))]
        c.pp = (prep, _sample_np(r, p, depth + 1, _PREP_NOUNS[prep]))
    return c


def _params(cx):
    """Per-sentence probabilities (see _sample_np) for complexity ``cx`` in [0, 1]."""
    return (0.12 + 0.25 * cx, 0.15 + 0.35 * cx, 0.08 + 0.6 * cx, 0.1 + 0.35 * cx, 0.04 + 0.1 * cx)


def _random_clause(r, cx):
    return _sample_clause(r, _params(cx), 0, _ALL_VERBS[int(r() * len(_ALL_VERBS))])


def sample_pair(rng: random.Random, target: int, max_len: int, min_len: int = 1, accept=None):
    """A random sentence of about ``target`` English tokens (incl. " ."), at most ``max_len``.

    Clauses, each sized by the room left (a bigger room means more adjectives, PPs and nested
    relative clauses), are joined by "and"/"but" until the length reaches ``target``; a clause
    that would overflow ``max_len`` is redrawn. Returns ``(derivation, english, french)``, or
    None when the result is shorter than ``min_len`` or ``accept(english)`` is false (checked
    before the French is finished, which saves time). ``realise(derivation)`` gives the same pair.
    """
    r = rng.random
    clauses, conjs, en, fr = [], [], [], []
    n = 1  # the final "."
    for _ in range(12):
        room = target - n - (1 if clauses else 0)
        cx = min(1.0, max(0.0, (room - 5) / 20)) * (0.5 + 0.5 * r())
        c = _random_clause(r, cx)
        ce, cf = [], []
        _clause(c, ce, cf, 0)
        ce = " ".join(ce)
        extra = ce.count(" ") + 1 + (1 if clauses else 0)  # multi-word entries count as several
        if n + extra > max_len:
            continue
        if clauses:
            conj = "and" if r() < 0.75 else "but"
            conjs.append(conj)
            en.append(conj)
            fr.append(_CONJ_FR[conj])
        clauses.append(c)
        en.append(ce)
        fr += cf
        n += extra
        if n >= target - 2:
            break
    if n < min_len or not clauses:
        return None
    en.append(".")
    en = " ".join(en)
    if accept is not None and not accept(en):
        return None
    fr.append(".")
    return (clauses, conjs), en, " ".join(_surface(fr))


# ----------------------------------------------------------------------------------------------
# Building exact derivations by hand (tests, notebooks): words may be English or French.
# ----------------------------------------------------------------------------------------------
def _index(table, word, what):
    for i, e in enumerate(table):
        en = e["en"] if isinstance(e["en"], str) else e["en"][0]
        fr = e["fr"][0]
        fr = fr if isinstance(fr, str) else fr[0]
        if word in (en, fr, en.replace(" ", "_")):
            return i
    raise KeyError(f"no {what} {word!r} in the grammar's lexicon")


def make_np(noun, determiner="def", number="sg", adjectives=(), pp=None, rel=None, coord=None):
    """A noun phrase; ``pp=("on", make_np(...))``; ``rel`` is a clause with a None subject or object."""
    if noun in [p["en"] for p in PRONOUNS] + [p["fr"][0][0] for p in PRONOUNS]:
        return NP(pron=_index(PRONOUNS, noun, "pronoun"))
    np = NP(_index(NOUNS, noun, "noun"), det=determiner, plural=number == "pl", coord=coord)
    for a in ([adjectives] if isinstance(adjectives, str) else adjectives):
        a = _index(ADJECTIVES, a, "adjective")
        if ADJECTIVES[a]["pre"]:
            np.pre = a
        else:
            np.post = a
    if pp is not None:
        np.pp = (_index(PREPOSITIONS, pp[0], "preposition"), pp[1])
    if rel is not None:
        rel.gap = "subj" if rel.subj is None else "obj"
        np.rel = rel
    return np


def make_clause(subject, verb, obj=None, *, to=None, adjective=None, negated=False, pp=None):
    """A clause; ``verb="be"`` with ``adjective=...`` for a predicate; ``to`` is the à-object."""
    v = BE if verb in ("be", "être") else _index(VERBS, verb, "verb")
    if isinstance(subject, str):
        subject = make_np(subject)
    adj = _index(ADJECTIVES, adjective, "adjective") if adjective is not None else None
    pp = (_index(PREPOSITIONS, pp[0], "preposition"), pp[1]) if pp is not None else None
    return Clause(subject, v, obj=obj, iobj=to, adj=adj, neg=negated, pp=pp)


def make_sentence(*clauses, conjunction="and"):
    return list(clauses), [conjunction] * (len(clauses) - 1)


def realise_np(noun, adjective=None, determiner="def", number="sg", variant=0, **kwargs):
    """``realise_np(noun="table", adjective="petit", number="pl")`` → ("the small tables", "les petites tables")."""
    adjectives = kwargs.pop("adjectives", () if adjective is None else (adjective,))
    return realise(make_np(noun, determiner, number, adjectives, **kwargs), variant)
