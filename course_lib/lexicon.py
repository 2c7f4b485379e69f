"""The lexicon of the course's synchronous English→French grammar (``course_lib.grammar``).

The words are data: one table per word class, one line per word, ``|`` between fields, parsed at
import into the lists below, each entry a named tuple:

    NOUNS[i]          Noun(en=("man", "men"), fr=(NounForms("homme", "hommes", "m"), <synonym>), tags="H")
    ADJECTIVES[i]     Adjective(en="small", fr=(("petit", "petite", "petits", "petites"), <synonym>),
                                pre=True, tags="*")
    VERBS[i]          Verb(en=("eat", "eats"), fr=(("mange", ..., "mangent"), <synonym>), subj="HA", obj="F", iobj="")
    PRONOUNS[i]       Pronoun(en="you", fr=(PronounForm("vous", 4, "m"), PronounForm("tu", 1, "m")))
    PREPOSITIONS[i]   Preposition(en="next to", fr=("à", "côté", "de"), tags="LHA", where="b")

``fr`` always holds two realisations: the main one and its synonym (the second French reference),
the same when a word has none. ``VERBS[BE]`` is the copula.
"""
from __future__ import annotations

from typing import NamedTuple


class NounForms(NamedTuple):
    """One French noun."""

    singular: str
    plural: str
    gender: str  # "m" or "f"


class Noun(NamedTuple):
    en: tuple[str, str]  # singular, plural
    fr: tuple[NounForms, NounForms]  # the main French noun, its synonym
    tags: str  # which slots it may fill (the tag letters of the tables below)


class Adjective(NamedTuple):
    en: str
    fr: tuple[tuple[str, ...], tuple[str, ...]]  # (m sg, f sg, m pl, f pl) of the main adjective, of its synonym
    pre: bool  # placed before the noun in French (petit, grand, ...), else after it
    tags: str  # the nouns it applies to ("*": any)


class Verb(NamedTuple):
    en: tuple[str, str]  # base form, third person singular ("wait for", "waits for")
    fr: tuple[tuple[str, ...], tuple[str, ...]]  # je tu il nous vous ils of the main verb, of its synonym
    subj: str  # tags of the subjects it takes
    obj: str  # tags of its direct objects ("" when it takes none)
    iobj: str  # tags of its to-object, "à" in French ("" when it takes none)
    copula: bool = False  # "be": a predicate adjective instead of an object


class PronounForm(NamedTuple):
    """One French subject pronoun."""

    word: str
    person: int  # 0..5: je tu il nous vous ils
    gender: str  # "m" or "f"


class Pronoun(NamedTuple):
    en: str
    fr: tuple[PronounForm, PronounForm]  # the main French pronoun, its alternative (you → vous | tu)


class Preposition(NamedTuple):
    en: str  # "next to"
    fr: tuple[str, ...]  # its French words, ("à", "côté", "de")
    tags: str  # the nouns it takes as object
    where: str  # "n": it modifies a noun, "v": a clause, "b": both


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
BE_EN = ("am", "are", "is", "are", "are", "are")  # indexed by person 0..5 like the French
BE_FR = ("suis", "es", "est", "sommes", "êtes", "sont")

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
DET_WEIGHTS = (0.5, 0.27, 0.1, 0.09, 0.04)  # how often each is drawn: def, indef, dem, my, our



def _rows(table: str):
    for line in table.strip().splitlines():
        yield [field.strip() for field in line.split("|")]


def _words(name: str) -> str:  # "wait_for" → "wait for"
    return name.replace("_", " ")


def _nouns() -> list[Noun]:
    nouns = []
    for fields in _rows(_NOUNS):
        en, fr, tags = fields[0].split(), fields[1].split(), fields[2]
        synonym = fields[3].split() if len(fields) > 3 else fr
        nouns.append(Noun(tuple(en), (NounForms(*fr[:3]), NounForms(*synonym[:3])), tags))
    return nouns


def _adjectives() -> list[Adjective]:
    adjectives = []
    for fields in _rows(_ADJECTIVES):
        forms = tuple(fields[1].split())
        synonym = tuple(fields[4].split()) if len(fields) > 4 else forms
        adjectives.append(Adjective(fields[0], (forms, synonym), fields[2] == "pre", fields[3]))
    return adjectives


def _verbs() -> list[Verb]:
    verbs = []
    for fields in _rows(_VERBS):
        en = tuple(_words(form) for form in fields[0].split())
        conjugation = tuple(fields[1].split())
        synonym = tuple(fields[5].split()) if len(fields) > 5 else conjugation
        verbs.append(Verb(en, (conjugation, synonym), fields[2], "" if fields[3] == "-" else fields[3],
                          "" if fields[4] == "-" else fields[4]))
    verbs.append(Verb(("be", "is"), (BE_FR, BE_FR), "HATPVUBLOFRC", "", "", copula=True))
    return verbs


def _pronouns() -> list[Pronoun]:
    pronouns = []
    for fields in _rows(_PRONOUNS):
        main = PronounForm(fields[1], int(fields[2]), fields[3])
        other = fields[4].split() if len(fields) > 4 else None
        pronouns.append(Pronoun(fields[0], (main, PronounForm(other[0], int(other[1]), other[2]) if other else main)))
    return pronouns


def _prepositions() -> list[Preposition]:
    return [Preposition(_words(fields[0]), tuple(fields[1].split()), fields[2], fields[3])
            for fields in _rows(_PREPOSITIONS)]


NOUNS = _nouns()
ADJECTIVES = _adjectives()
VERBS = _verbs()
BE = len(VERBS) - 1  # the copula's index in VERBS
PRONOUNS = _pronouns()
PREPOSITIONS = _prepositions()

__all__ = ["ADJECTIVES", "BE", "BE_EN", "BE_FR", "DETERMINERS", "DET_NAMES", "DET_WEIGHTS", "NOUNS", "PREPOSITIONS",
           "PRONOUNS", "VERBS", "Adjective", "Noun", "NounForms", "Preposition", "Pronoun", "PronounForm", "Verb"]
