"""Bilingual vocabularies of the sandbox web's subjects (data only).

Each subject has title words (what its page titles are made of) and extra body words
(near-misses shared with other subjects, e.g. physics mentions atoms and energy, a
cookery page mentions salt and vinegar). Words are comma-separated; Chinese text is
written without spaces, as on a real page, and segmented by the crawler (jieba).
"""

from __future__ import annotations

from dataclasses import dataclass


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


@dataclass(frozen=True, slots=True)
class Subject:
    """One topic of the sandbox web."""

    slug: str  # URL folder: /<slug>/p0001.html
    category: str  # wikispeedia-style label
    name_en: str
    name_zh: str
    title_en: tuple[str, ...]
    title_zh: tuple[str, ...]
    body_en: tuple[str, ...] = ()  # extra body-only words (near-misses)
    body_zh: tuple[str, ...] = ()


def _subject(
    slug: str,
    category: str,
    name_en: str,
    name_zh: str,
    *,
    title_en: str,
    title_zh: str,
    body_en: str = "",
    body_zh: str = "",
) -> Subject:
    return Subject(
        slug,
        category,
        name_en,
        name_zh,
        _words(title_en),
        _words(title_zh),
        _words(body_en),
        _words(body_zh),
    )


CHEMISTRY = _subject(
    "chemistry",
    "subject.Science.Chemistry",
    "Chemistry",
    "化学",
    title_en=(
        "chemistry, chemical, molecule, reaction, compound, element, atom, acid, periodic table,"
        " ion,"
        "oxidation, catalyst, organic chemistry, inorganic chemistry, chemical bond, polymer,"
        "isotope, solution, base, oxide"
    ),
    title_zh=(
        "化学,化学反应,化合物,分子,元素,原子,酸,元素周期表,离子,氧化,催化剂,有机化学,无机化学,化学键,碱,"
        "聚合物,同位素,溶液,氧化物"
    ),
    body_en=(
        "molecular, reduction, covalent, electrolysis, valence, titration, reagent, solvent, ester,"
        "alkane, stoichiometry, reaction kinetics, electron, energy, laboratory, experiment, salt"
    ),
    body_zh="还原,共价键,电解,化合价,滴定,试剂,溶剂,分子式,电子,能量,实验室,实验,盐",
)

PHYSICS = _subject(
    "physics",
    "subject.Science.Physics",
    "Physics",
    "物理",
    title_en=(
        "physics, force, gravity, velocity, acceleration, momentum, quantum, relativity, optics,"
        "mechanics, magnetism, wave, photon, particle, friction, inertia, laser, thermodynamics"
    ),
    title_zh="物理,力学,引力,速度,加速度,动量,量子,相对论,光学,热力学,磁场,波动,光子,粒子,摩擦力,惯性,激光",
    # near-misses: words a chemistry topic also uses
    body_en="atom, energy, electron, nucleus, laboratory, experiment",
    body_zh="原子,能量,电子,原子核,实验室,实验",
)

SPORTS = _subject(
    "sports",
    "subject.Sports",
    "Sports",
    "体育",
    title_en=(
        "sports, football, basketball, tennis, olympics, athlete, coach, match, tournament,"
        "stadium, marathon, swimming, goal, team, league, championship, referee"
    ),
    title_zh="体育,足球,篮球,网球,奥运会,运动员,教练,比赛,锦标赛,体育场,马拉松,游泳,进球,球队,联赛,冠军,裁判",
    body_en="energy, training",
    body_zh="能量,训练",
)

FOOD = _subject(
    "food",
    "subject.Food_and_drink",
    "Food and drink",
    "美食",
    title_en=(
        "cooking, recipe, noodles, dumplings, rice, soup, kitchen, chef, flavor, spicy, tea,"
        "dessert, bread, vegetables, baking, sauce, food"
    ),
    title_zh="美食,烹饪,菜谱,面条,饺子,米饭,汤,厨房,厨师,味道,辣,茶,甜点,面包,蔬菜,烘焙,酱汁",
    body_en="salt, vinegar, sugar",
    body_zh="盐,醋,糖",
)

HISTORY = _subject(
    "history",
    "subject.History",
    "History",
    "历史",
    title_en=(
        "history, dynasty, emperor, empire, war, revolution, ancient, medieval, archaeology,"
        "kingdom, treaty, battle, civilization, chronicle"
    ),
    title_zh="历史,朝代,皇帝,帝国,战争,革命,古代,中世纪,考古,王国,条约,战役,文明,史书",
    body_en="alchemy, gunpowder",
    body_zh="炼金术,火药",
)

GEOGRAPHY = _subject(
    "geography",
    "subject.Geography",
    "Geography and travel",
    "地理",
    title_en=(
        "geography, mountain, river, continent, climate, desert, island, ocean, valley, capital,"
        "travel, map, population, tourism, coast"
    ),
    title_zh="地理,山脉,河流,大陆,气候,沙漠,岛屿,海洋,山谷,首都,旅行,地图,人口,旅游,海岸",
    body_en="minerals, salt lake",
    body_zh="矿物,盐湖",
)

SUBJECTS: tuple[Subject, ...] = (CHEMISTRY, PHYSICS, SPORTS, FOOD, HISTORY, GEOGRAPHY)

# share of the content pages each subject gets
WEIGHTS: dict[str, float] = {
    "chemistry": 0.25,
    "physics": 0.15,
    "sports": 0.15,
    "food": 0.15,
    "history": 0.15,
    "geography": 0.15,
}

HUB_CATEGORY = "sandbox.hub"
PRIVATE_CATEGORY = "sandbox.private"

FILLER_EN = _words(
    "the, of, and, in, is, a, to, this, that, with, for, on, are, as, by, from, many, new,"
    "study, people, often, also, which, first, known, used, between, important, early, world,"
    "most, some, these, we, can, its, their, was, were, has, have"
)
FILLER_ZH = _words(
    "的,是,在,和,了,这,一个,我们,研究,通过,可以,主要,其中,已经,许多,重要,世界,发展,方法,"
    "人们,问题,以及,因为,所以,就是,他们,这些,一些"
)

# anchors that say nothing about their target
UNINFORMATIVE = _words(
    "click here, read more, more, here, next page, details, 更多, 下一页, 点击这里, 详情, 阅读全文"
)
